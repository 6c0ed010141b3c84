"""The soak's schedule: a pure function of the seed and duration, with the faults, overlaps and limits it promises."""

import pytest

from testkit.soak import schedule
from testkit.soak.schedule import KINDS, Topology, describe, parse_duration, plan

TOPO = Topology(
    broker_dcs=("dc1", "dc2"),
    tiebreaker="dc3",
    brokers={"dc1": ("dc1-broker1", "dc1-broker2"), "dc2": ("dc2-broker1", "dc2-broker2")},
    controllers={"dc1": ("dc1-controller",), "dc2": ("dc2-controller",), "dc3": ("dc3-controller",)},
)
SEEDS = range(200)
HALF_HOUR = 1800


def plain(faults):
    return [f.as_dict() for f in faults]


def test_the_same_seed_and_duration_give_the_same_schedule_and_the_same_text():
    assert plain(plan(42, HALF_HOUR, TOPO)) == plain(plan(42, HALF_HOUR, TOPO))
    assert describe(plan(42, HALF_HOUR, TOPO), 42, HALF_HOUR) == describe(plan(42, HALF_HOUR, TOPO), 42, HALF_HOUR)


def test_another_seed_or_duration_gives_another_schedule():
    assert plain(plan(42, HALF_HOUR, TOPO)) != plain(plan(43, HALF_HOUR, TOPO))
    assert plain(plan(42, HALF_HOUR, TOPO)) != plain(plan(42, 2400, TOPO))


def test_half_an_hour_has_at_least_20_faults_of_at_least_6_kinds_and_every_kind():
    for seed in SEEDS:
        faults = plan(seed, HALF_HOUR, TOPO)
        assert len(faults) >= 20, f"seed {seed}: {len(faults)} faults"
        assert {f.kind for f in faults} == set(KINDS)


def test_overlaps_are_only_the_documented_ones_inside_one_dc():
    for seed in SEEDS:
        faults = plan(seed, HALF_HOUR, TOPO)
        by_id = {f.id: f for f in faults}
        for f in faults:
            if f.parent is None:
                continue
            parent = by_id[f.parent]
            assert parent.kind == "broker-pause"
            assert f.kind in ("rolling-restart", "broker-kill", "controller-kill")
            dc = TOPO.dc_of(parent.target)
            assert (f.target if f.kind == "rolling-restart" else TOPO.dc_of(f.target)) == dc
            assert f.target != parent.target
            # It starts while the pause is on.
            assert parent.at < f.at < parent.at + parent.hold


def test_slots_do_not_overlap_and_the_schedule_fits_its_duration():
    for seed in SEEDS:
        faults = plan(seed, HALF_HOUR, TOPO)
        primaries = [f for f in faults if f.parent is None]
        for before, after in zip(primaries, primaries[1:], strict=False):
            planned_end = max(
                [before.at + before.hold + KINDS[before.kind].overhead]
                + [c.at + c.hold + KINDS[c.kind].overhead for c in before.children]
            )
            assert after.at >= planned_end + schedule.GAP_S[0] - 0.2  # each figure is rounded to 0.1 s
        assert primaries[0].at == schedule.WARMUP_S
        last = primaries[-1]
        ends = [last.at + last.hold + KINDS[last.kind].overhead]
        ends += [c.at + c.hold + KINDS[c.kind].overhead for c in last.children]
        assert max(ends) <= HALF_HOUR - schedule.COOLDOWN_S + 0.2
        assert [f.id for f in faults] == list(range(1, len(faults) + 1))
        assert [f.at for f in faults] == sorted(f.at for f in faults)


def test_holds_stay_in_their_kinds_range_and_a_pause_is_20_to_60_seconds():
    for seed in SEEDS:
        for f in plan(seed, HALF_HOUR, TOPO):
            low, high = KINDS[f.kind].hold
            assert low <= f.hold <= high, f
            if f.kind == "broker-pause":
                assert 20 <= f.hold <= 60


def test_only_two_dcs_lost_is_beyond_the_model_and_it_is_marked_so():
    faults = [f for seed in SEEDS for f in plan(seed, HALF_HOUR, TOPO)]
    assert {f.kind for f in faults if not f.in_model} == {"two-dcs-lost"}
    assert all(f.target in ("dc1+dc3", "dc2+dc3") for f in faults if not f.in_model)
    text = describe(plan(3, HALF_HOUR, TOPO), 3, HALF_HOUR)
    beyond = [line for line in text.splitlines()[2:] if "two-dcs-lost" in line]
    assert beyond
    assert all("BEYOND THE FAILURE MODEL" in line for line in beyond)


def test_in_model_only_and_short_runs_leave_the_fault_beyond_the_model_out():
    assert all(f.in_model for seed in SEEDS for f in plan(seed, HALF_HOUR, TOPO, beyond_model=False))
    assert all(f.in_model for seed in SEEDS for f in plan(seed, 600, TOPO))


def test_one_broker_carries_every_disk_full_of_a_run():
    for seed in SEEDS:
        assert len({f.target for f in plan(seed, 3600, TOPO) if f.kind == "disk-full"}) == 1


@pytest.mark.parametrize("seed", range(20))
def test_a_five_minute_run_has_a_few_faults_that_fit(seed):
    faults = plan(seed, 300, TOPO)
    assert 1 <= len(faults) <= 6


def test_targets_name_what_each_kind_takes():
    seen = {}
    for seed in SEEDS:
        for f in plan(seed, HALF_HOUR, TOPO):
            seen.setdefault(f.kind, set()).add(f.target)
    assert seen["broker-kill"] <= set(TOPO.all_brokers)
    assert "active" in seen["controller-kill"]
    assert seen["controller-kill"] - {"active"} <= set(TOPO.all_controllers)
    assert seen["oneway"] == {"dc1>dc2", "dc2>dc1"}
    assert seen["cut"] == {"dc1<>dc2"}
    assert seen["tiebreaker-isolated"] == {"dc3"}
    assert seen["dc-loss"] == {"dc1", "dc2"}
    assert seen["rolling-restart"] == {"dc1", "dc2"}


@pytest.mark.parametrize(
    ("text", "seconds"), [("1800", 1800), ("30m", 1800), ("1h", 3600), ("1h30m", 5400), ("90s", 90), ("5m", 300)]
)
def test_durations_read_as_seconds(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "30 minutes", "m", "-5m", "1.5h"])
def test_a_bad_duration_is_refused_with_the_forms_it_takes(text):
    with pytest.raises(ValueError, match="30m"):
        parse_duration(text)


def test_the_cluster_shape_needs_two_broker_dcs_and_one_tiebreaker():
    class Node:
        def __init__(self, host, dc):
            self.host, self.dc = host, dc

    class Cluster:
        dcs = ["dc1", "dc2"]
        brokers = [Node("b1", "dc1"), Node("b2", "dc2")]
        controllers = [Node("c1", "dc1"), Node("c2", "dc2")]

    with pytest.raises(ValueError, match="one tiebreaker DC"):
        Topology.of(Cluster())
    Cluster.controllers.append(Node("c3", "dc3"))
    assert Topology.of(Cluster()).tiebreaker == "dc3"
