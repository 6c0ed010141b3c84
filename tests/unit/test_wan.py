"""The testbed's WAN as data (testkit/wan/links.py): the inventory's list, its refusals, and the packet schedule."""

import itertools
import os
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from testkit.wan import control, inventory, rtt
from testkit.wan.delayer import MAX_STAMP_AGE_S, Lateness, arrival, late_share
from testkit.wan.links import MAX_BACKLOG_S, QUEUE_BASE, Link, Schedule, WanError, iptables_rules, links, with_rtt

DCS = ["dc1", "dc2", "dc3"]
SEEDS = [
    {"between": ["dc1", "dc2"], "delay_ms": 15},
    {"between": ["dc1", "dc3"], "delay_ms": 20},
    {"between": ["dc2", "dc3"], "delay_ms": 20},
]


def by_pair(found):
    return {(x.src, x.dst): x for x in found}


def test_the_inventorys_list_gives_each_direction_its_delay():
    found = by_pair(links(SEEDS, DCS))
    assert len(found) == 6
    assert found[("dc1", "dc2")].delay_ms == found[("dc2", "dc1")].delay_ms == 15
    assert {found[p].delay_ms for p in found if "dc3" in p} == {20}
    assert all(x.active for x in found.values())


def test_one_way_items_and_later_items_override_earlier_ones():
    found = by_pair(
        links([*SEEDS, {"from": "dc1", "to": "dc2", "delay_ms": 40, "jitter_ms": 2, "rate_mbit": 100}], DCS)
    )
    assert found[("dc1", "dc2")] == Link("dc1", "dc2", 40, 2, 100, found[("dc1", "dc2")].queue)
    assert found[("dc2", "dc1")].delay_ms == 15


def test_a_direction_nobody_names_has_no_delay_and_no_queue_rule():
    found = links([{"from": "dc1", "to": "dc2", "delay_ms": 5}], DCS)
    active = [x for x in found if x.active]
    assert [(x.src, x.dst) for x in active] == [("dc1", "dc2")]
    assert links(None, DCS) == links([], DCS)
    assert not any(x.active for x in links([], DCS))


def test_queue_numbers_depend_only_on_the_dcs():
    a = by_pair(links(SEEDS, DCS))
    b = by_pair(links([{"between": ["dc2", "dc3"], "delay_ms": 50}], DCS))
    assert {p: x.queue for p, x in a.items()} == {p: x.queue for p, x in b.items()}
    assert sorted(x.queue for x in a.values()) == list(range(QUEUE_BASE, QUEUE_BASE + 6))


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"between": ["dc1", "dc9"], "delay_ms": 5},
            "testbed_wan[0]: 'dc9' is not a DC of the inventory (its DCs: dc1, dc2, dc3)",
        ),
        ({"from": "dc1", "to": "dc2", "delay_ms": -5}, "testbed_wan[0]: delay_ms -5 is negative"),
        ({"between": ["dc1", "dc2"], "delay_ms": 5, "jitter_ms": -1}, "testbed_wan[0]: jitter_ms -1 is negative"),
        ({"between": ["dc1", "dc2"], "delay_ms": 5, "rate_mbit": -1}, "testbed_wan[0]: rate_mbit -1 is negative"),
        ({"between": ["dc1", "dc2"], "delay_ms": 5, "jitter_ms": 6}, "jitter_ms 6 is larger than delay_ms 5"),
        ({"between": ["dc1", "dc1"], "delay_ms": 5}, "a link joins two different DCs, not 'dc1' to itself"),
        ({"between": ["dc1"], "delay_ms": 5}, "between must name two DCs"),
        ({"from": "dc1", "delay_ms": 5}, "name its DCs with between"),
        ({"between": ["dc1", "dc2"], "from": "dc1", "to": "dc2"}, "either between"),
        ({"between": ["dc1", "dc2"], "delay_ms": "15ms"}, "delay_ms must be a number of ms, not '15ms'"),
        ({"between": ["dc1", "dc2"], "delay_ms": float("nan")}, "testbed_wan[0]: delay_ms nan is not a finite number"),
        ({"between": ["dc1", "dc2"], "delay_ms": float("inf")}, "testbed_wan[0]: delay_ms inf is not a finite number"),
        (
            {"between": ["dc1", "dc2"], "delay_ms": 5, "jitter_ms": float("nan")},
            "testbed_wan[0]: jitter_ms nan is not a finite number",
        ),
        (
            {"between": ["dc1", "dc2"], "delay_ms": 5, "rate_mbit": float("inf")},
            "testbed_wan[0]: rate_mbit inf is not a finite number",
        ),
        ({"between": ["dc1", "dc2"], "delay": 15}, "unknown key(s) delay"),
        ("dc1-dc2: 15", "a link is a mapping"),
    ],
)
def test_a_bad_item_is_refused_naming_it(item, message):
    with pytest.raises(WanError) as refused:
        links([item], DCS)
    assert message in str(refused.value)


def test_every_problem_is_listed_at_once():
    with pytest.raises(WanError) as refused:
        links([{"between": ["dc1", "dc9"], "delay_ms": 5}, {"from": "dc1", "to": "dc2", "delay_ms": -5}], DCS)
    assert str(refused.value).count("\n- ") == 2
    with pytest.raises(WanError, match="must be a list"):
        links({"dc1": 5}, DCS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--rtt", "nan"], "set --rtt: rtt_ms nan is not a finite number"),
        (["--rtt", "30", "--tiebreaker-rtt", "inf"], "set --tiebreaker-rtt: rtt_ms inf is not a finite number"),
        (["--rtt", "-1"], "set --rtt: rtt_ms -1.0 is negative"),
    ],
)
def test_set_refuses_a_round_trip_that_is_not_a_finite_number_before_touching_the_wan(args, message, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "testkit.wan", "set", "--state-dir", str(tmp_path), *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_with_rtt_halves_the_round_trip_and_keeps_the_rest():
    found = links([*SEEDS, {"between": ["dc1", "dc2"], "delay_ms": 15, "jitter_ms": 3, "rate_mbit": 50}], DCS)
    changed = by_pair(with_rtt(found, "dc1", "dc2", 100))
    assert changed[("dc1", "dc2")].delay_ms == changed[("dc2", "dc1")].delay_ms == 50
    assert (changed[("dc1", "dc2")].jitter_ms, changed[("dc1", "dc2")].rate_mbit) == (3, 50)
    assert changed[("dc1", "dc3")] == by_pair(found)[("dc1", "dc3")]
    assert not by_pair(with_rtt(found, "dc1", "dc2", 0))[("dc1", "dc2")].jitter_ms


def test_a_constant_delay_adds_exactly_the_delay():
    s = Schedule(Link("a", "b", delay_ms=15))
    assert [s.due(t, 1500) for t in (0.0, 0.001, 0.5)] == pytest.approx([0.015, 0.016, 0.515])


# The property is about ordering, not speed: generating 200-packet lists is slow on a loaded machine, and
# hypothesis's own timing checks must not fail the test for that.
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.floats(0, 0.01), st.floats(-1, 1), st.integers(40, 65535)), min_size=1, max_size=200))
def test_jitter_never_reorders_and_stays_within_its_bounds(arrivals):
    draws = iter(j for _, j, _ in arrivals)
    s = Schedule(Link("a", "b", delay_ms=10, jitter_ms=4), uniform=lambda lo, hi: next(draws) * hi)
    now, departures = 0.0, []
    for gap, _, size in arrivals:
        now += gap
        due = s.due(now, size)
        assert due >= now + 0.006 - 1e-9  # never earlier than delay - jitter
        departures.append(due)
    assert departures == sorted(departures)


def test_a_rate_cap_spaces_packets_by_their_transmission_time_and_drops_past_the_buffer():
    s = Schedule(Link("a", "b", delay_ms=10, rate_mbit=8))  # 1 byte per microsecond
    first, second = s.due(0.0, 1000), s.due(0.0, 1000)
    assert first == pytest.approx(0.001 + 0.010)
    assert second - first == pytest.approx(0.001)
    # A burst longer than the buffer: the packets past MAX_BACKLOG_S of queueing are dropped.
    burst = [s.due(0.0, 1000) for _ in range(int(MAX_BACKLOG_S / 0.001) + 10)]
    assert None in burst
    kept = [d for d in burst if d is not None]
    assert kept == sorted(kept)
    assert max(kept) <= MAX_BACKLOG_S + 0.001 + 0.010 + 1e-9


def test_the_rules_send_only_active_directions_to_their_queues_with_bypass():
    found = [x for x in links([{"from": "dc1", "to": "dc2", "delay_ms": 5}], DCS) if x.active]
    subnets = {"dc1": "10.0.1.0/24", "dc2": "10.0.2.0/24", "dc3": "10.0.3.0/24"}
    assert iptables_rules(found, subnets, "CHAIN") == [
        f"-A CHAIN -s 10.0.1.0/24 -d 10.0.2.0/24 -j NFQUEUE --queue-num {found[0].queue} --queue-bypass"
    ]


def test_the_delayer_counts_as_loaded_only_with_exactly_the_active_links_and_a_fresh_report(monkeypatch):
    active = [x for x in links(SEEDS, DCS) if x.active]
    report = {
        "monotonic": 100.0,
        "links": {f"{x.src}>{x.dst}": {"delay_ms": x.delay_ms, "jitter_ms": 0.0, "rate_mbit": 0.0} for x in active},
    }
    monkeypatch.setattr(control.time, "monotonic", lambda: 101.0)
    assert control.loaded(report, active)
    assert not control.loaded(None, active)
    assert not control.loaded(report, active[:-1])
    stale = dict(report, monotonic=90.0)
    assert not control.loaded(stale, active)
    other = with_rtt(active, "dc1", "dc2", 100)
    assert not control.loaded(report, other)


def test_only_a_report_of_the_running_supervisors_child_is_current(tmp_path, monkeypatch):
    """A killed delayer's last report stays fresh for seconds: apply must not take it for the new delayer's."""
    state = control.State(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        monkeypatch.setattr(state, "supervisor_pid", lambda: os.getpid())
        assert state.report_is_current({"pid": child.pid})
        assert not state.report_is_current({"pid": os.getpid()}), "the supervisor itself is not its child"
        assert not state.report_is_current({})
        assert not state.report_is_current(None)
        monkeypatch.setattr(state, "supervisor_pid", lambda: None)
        assert not state.report_is_current({"pid": child.pid}), "no supervisor runs"
        monkeypatch.setattr(state, "supervisor_pid", lambda: os.getpid())
        child.kill()
        time.sleep(0.2)
        assert not state.report_is_current({"pid": child.pid}), "killed, not yet reaped"
        child.wait()
        assert not state.report_is_current({"pid": child.pid}), "killed and gone"
    finally:
        child.kill()
        child.wait()


def test_the_request_takes_each_dcs_subnet_brokers_and_first_node_from_the_inventory():
    hosts = [
        {"host": f"{dc}-{role}{i}", "dc": dc, "address": f"10.0.{n}.{10 + i}", "subnet": f"10.0.{n}.0/24",
         "broker": role == "broker"}
        for (n, dc), role, i in itertools.product(enumerate(DCS, 1), ("controller", "broker"), range(2))
        if not (dc == "dc3" and role == "broker")
    ]  # fmt: skip
    found = inventory.request(hosts, SEEDS)
    assert found["subnets"] == {"dc1": "10.0.1.0/24", "dc2": "10.0.2.0/24", "dc3": "10.0.3.0/24"}
    assert found["broker_dcs"] == ["dc1", "dc2"]
    assert found["probes"]["dc1"] == ["dc1-controller0", "10.0.1.10"]
    assert found["neighbours"] == {"dc1": "10.0.1.11", "dc2": "10.0.2.11", "dc3": "10.0.3.11"}
    assert inventory.request(hosts[-1:], SEEDS)["neighbours"] == {}  # a DC of one node has none
    assert found["wan"] == SEEDS


def test_what_the_wan_adds_is_the_far_floor_less_the_near_one_of_the_same_rounds():
    assert rtt.wan_floor([31.4, None, 32.0, 30.9], [1.2, 0.8, None, 0.7]) == 30.2
    assert rtt.wan_floor([31.4], [None]) is None  # no near round trip: nothing to set it against


def test_the_delayer_counts_how_late_each_packet_left():
    late = Lateness()
    for seconds in (0.00005, 0.0003, 0.0008, 0.0015, 0.004, 0.2):
        late.add(seconds)
    before = late.counts()
    assert before == {"0.1": 1, "0.5": 1, "1": 1, "2": 1, "5": 1, "10": 0, "50": 0, "inf": 1}
    late.add(0.003)
    late.add(0.00001)
    assert late_share(before, late.counts()) == {"released": 2, "late": 1, "share": 0.5}
    assert late_share(None, before, over_ms=5) == {"released": 6, "late": 1, "share": 0.16667}


def test_a_queue_another_process_holds_is_named_with_its_likely_holder(monkeypatch):
    # What netfilterqueue raises when the kernel refuses the bind: one process per queue.
    class Taken:
        def bind(self, *args, **kwargs):
            raise OSError("Failed to create queue 7000.")

    fake = type(sys)("netfilterqueue")
    fake.NetfilterQueue, fake.COPY_PACKET = Taken, 2
    monkeypatch.setitem(sys.modules, "netfilterqueue", fake)
    from testkit.wan.delayer import Direction  # noqa: PLC0415

    with pytest.raises(OSError, match=r"Failed to create queue 7000.: another process holds NFQUEUE 7000, most likely"):
        Direction(Link("dc1", "dc2", delay_ms=15, queue=7000), on_packet=None)

    class Unbound:  # what netfilterqueue says without the rights to bind at all: no holder to name
        def bind(self, *args, **kwargs):
            raise OSError("Failed to bind family 2. Are you root?")

    fake.NetfilterQueue = Unbound
    with pytest.raises(OSError, match=r"^Failed to bind family 2. Are you root\?$"):
        Direction(Link("dc1", "dc2", delay_ms=15, queue=7000), on_packet=None)


def test_a_packet_counts_from_the_kernels_receive_stamp_and_from_its_read_without_a_usable_one():
    # Read at monotonic 100.0 while the wall clock says 5000.0; stamped 0.4 ms earlier on the wall clock.
    assert arrival(100.0, 4999.9996, 5000.0) == pytest.approx(99.9996)
    assert arrival(100.0, 0.0, 5000.0) == 100.0  # no stamp
    assert arrival(100.0, 5000.5, 5000.0) == 100.0  # a stamp after the read: the wall clock stepped back
    assert arrival(100.0, 5000.0 - MAX_STAMP_AGE_S - 1, 5000.0) == 100.0  # too old to be a wait
