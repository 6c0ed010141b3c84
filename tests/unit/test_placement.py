"""DC-aware placement: the three rules, determinism and minimal movement, over random shapes."""

import re
import sys

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ansible_collections.stretch.kafka.plugins.module_utils.placement import (
    PlacementError,
    add_load,
    cluster_load,
    ideal,
    moved_replicas,
    place,
    sound,
    violations,
)


def brokers(n_a, n_b, names=("east", "west")):
    return {names[0]: [100 + i for i in range(n_a)], names[1]: [200 + i for i in range(n_b)]}


def feasible(n_a, n_b, rf):
    return 4 <= rf <= n_a + n_b and rf - 2 <= max(n_a, n_b) and n_a >= 2 and n_b >= 2


shapes = st.tuples(st.integers(2, 8), st.integers(2, 8), st.integers(4, 8), st.integers(1, 300)).filter(
    lambda s: feasible(*s[:3])
)


def test_the_documented_example():
    b = {"A": ["A1", "A2"], "B": ["B1", "B2"]}
    assert place(b, 4, 4) == {
        0: ["A1", "A2", "B1", "B2"],
        1: ["B1", "B2", "A1", "A2"],
        2: ["A2", "A1", "B2", "B1"],
        3: ["B2", "B1", "A2", "A1"],
    }


@settings(max_examples=300, deadline=None)
@given(shapes)
def test_every_shape_satisfies_the_three_rules(shape):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    assignment = place(b, rf, partitions)
    assert sorted(assignment) == list(range(partitions))
    assert all(len(set(r)) == rf for r in assignment.values())
    assert violations(assignment, b) == []
    if n_a == n_b:
        leaders = [sum(1 for r in assignment.values() if r[0] == x) for x in b["east"] + b["west"]]
        assert max(leaders) - min(leaders) <= 1


@settings(max_examples=150, deadline=None)
@given(shapes)
def test_weights_following_broker_counts_spread_leaders_over_all_brokers(shape):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    weights = {"east": n_a, "west": n_b}
    assignment = place(b, rf, partitions, weights=weights)
    assert violations(assignment, b, weights=weights) == []
    leaders = [sum(1 for r in assignment.values() if r[0] == x) for x in b["east"] + b["west"]]
    assert max(leaders) - min(leaders) <= 1


@settings(max_examples=100, deadline=None)
@given(shapes, st.randoms())
def test_placement_is_deterministic_whatever_the_input_order(shape, rnd):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    shuffled = {dc: rnd.sample(ids, len(ids)) for dc, ids in reversed(list(b.items()))}
    assert place(b, rf, partitions) == place(shuffled, rf, partitions)


@settings(max_examples=150, deadline=None)
@given(shapes, st.integers(1, 100))
def test_growing_the_partition_count_moves_nothing(shape, extra):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    before = place(b, rf, partitions)
    after = place(b, rf, partitions + extra, current=before)
    assert {p: after[p] for p in before} == before
    assert violations(after, b) == []


@settings(max_examples=150, deadline=None)
@given(shapes, st.sampled_from(["east", "west"]))
def test_adding_a_broker_moves_nothing_until_balancing_which_moves_few_replicas(shape, dc):
    n_a, n_b, rf, partitions = shape
    assume((n_a if dc == "east" else n_b) < 8)
    b = brokers(n_a, n_b)
    before = place(b, rf, partitions)
    grown = {k: [*v, max(v) + 1] if k == dc else v for k, v in b.items()}
    assert place(grown, rf, partitions, current=before) == before, "a converge balanced by itself"
    after = place(grown, rf, partitions, current=before, balance=True)
    assert violations(after, grown) == []
    moved = moved_replicas(before, after)
    # Every replica the new broker holds must be copied to it; and reusing the
    # current lists must never move more than laying the topic out afresh.
    new_broker_replicas = sum(1 for r in after.values() if max(grown[dc]) in r)
    assert moved >= new_broker_replicas
    assert moved <= moved_replicas(before, dict(enumerate(ideal(grown, rf, partitions))))
    # And the repair reaches that bound: every copy goes to the new broker.
    assert moved == new_broker_replicas


def test_balancing_ten_thousand_partitions_onto_a_new_broker_copies_only_its_share():
    b = brokers(4, 4)
    before = place(b, 4, 10_000)
    grown = {"east": [*b["east"], 104], "west": b["west"]}
    assert place(grown, 4, 10_000, current=before) == before, "a converge moves nothing onto the new broker"
    after = place(grown, 4, 10_000, current=before, balance=True)
    assert violations(after, grown) == []
    # DC east holds 20,000 replicas: 4,000 per broker once the fifth joins.
    assert moved_replicas(before, after) == 4_000


def test_ten_thousand_partitions():
    b = brokers(4, 4)
    assignment = place(b, 4, 10_000)
    assert violations(assignment, b) == []


def kafka_striped(b, rf, partitions):
    """Kafka's own rack-alternating placement: A, B, A, B, ..."""
    east, west = b["east"], b["west"]
    out = {}
    for p in range(partitions):
        first, second = (east, west) if p % 2 == 0 else (west, east)
        out[p] = [
            (first if k % 2 == 0 else second)[(p // 2 + k // 2) % len(first if k % 2 == 0 else second)]
            for k in range(rf)
        ]
    return out


def test_kafkas_alternating_placement_fails_rule_two():
    b = brokers(2, 2)
    striped = kafka_striped(b, 4, 4)
    assert striped[0] == [100, 200, 101, 201]
    problems = violations(striped, b)
    assert any("do not stand together" in p for p in problems)


@pytest.mark.parametrize(
    ("shape", "rf", "message"),
    [
        ((1, 3), 4, "DC east has 1 broker(s); each DC needs at least 2"),
        ((2, 2), 3, "replication factor 3 cannot put 2 replicas in each of 2 DCs"),
        ((2, 2), 5, "replication factor 5 is larger than the 4 brokers"),
    ],
)
def test_impossible_shapes_say_why(shape, rf, message):
    with pytest.raises(PlacementError, match=re.escape(message)):
        place(brokers(*shape), rf, 4)


def test_three_dcs_are_refused():
    with pytest.raises(PlacementError, match="exactly 2 broker DCs"):
        place({"a": [1, 2], "b": [3, 4], "c": [5, 6]}, 4, 1)


def test_partition_decrease_is_refused():
    b = brokers(2, 2)
    with pytest.raises(PlacementError, match="cannot go down to 2"):
        place(b, 4, 2, current=place(b, 4, 4))


def test_violations_name_the_partition():
    b = brokers(2, 2)
    assert violations({0: [100, 101, 102, 200]} | {1: [200, 201, 100, 101]}, {**b, "east": [100, 101, 102]}) == [
        "partition 0: fewer than 2 replicas in west ([100, 101, 102, 200])"
    ]


@pytest.mark.parametrize(("n_a", "n_b"), [(3, 3), (4, 4)])
def test_many_small_topics_spread_leaders_and_replicas_over_the_whole_cluster(n_a, n_b):
    b = brokers(n_a, n_b)
    load = cluster_load([])
    for _ in range(200):
        assignment = place(b, 4, 3, load=load)
        assert violations(assignment, b) == []
        add_load(load, assignment)
    every = b["east"] + b["west"]
    for kind, total in (("leaders", 200 * 3), ("replicas", 200 * 3 * 4)):
        share = total / len(every)
        counts = {x: load[kind][x] for x in every}
        assert sum(counts.values()) == total
        assert all(abs(n - share) <= 1 for n in counts.values()), f"{kind} per broker {counts}, share {share}"


def test_without_the_clusters_load_small_topics_pile_up_on_the_first_brokers():
    """What the balancing fixes: each topic laid out alone starts from the same brokers."""
    b = brokers(3, 3)
    load = cluster_load([])
    for _ in range(200):
        add_load(load, place(b, 4, 3))
    leaders = [load["leaders"][x] for x in b["east"] + b["west"]]
    assert max(leaders) - min(leaders) >= 100


def test_a_topic_placed_with_the_clusters_load_starts_where_the_cluster_is_lightest():
    b = {"A": ["A1", "A2"], "B": ["B1", "B2"]}
    load = cluster_load([{0: ["A1", "A2", "B1", "B2"], 1: ["A1", "A2", "B2", "B1"]}])
    # A leads twice already: B leads first, and A's leader is the one that leads nothing yet.
    assert place(b, 4, 2, load=load) == {0: ["B1", "B2", "A2", "A1"], 1: ["A2", "A1", "B2", "B1"]}


# -- a converge: a partition that meets the rules keeps its replicas, whatever the other topics hold ----------


def some_load(b, rnd, topics=6):
    """What a few other topics, laid out one after another against the cluster, put on the brokers."""
    load = cluster_load([])
    for _ in range(rnd.randint(0, topics)):
        add_load(load, place(b, 4, rnd.randint(1, 12), load=load))
    return load


def damaged(layout, b, rf, rnd):
    """layout with some partitions off the rules: a broker gone, a DC's replicas apart, a replica short or extra."""
    out = {p: list(r) for p, r in layout.items()}
    every = b["east"] + b["west"]
    for p in rnd.sample(sorted(out), k=rnd.randint(0, len(out))):
        kind = rnd.choice(["gone", "striped", "short", "extra", "kept"])
        r = out[p]
        if kind == "gone":
            r[rnd.randrange(rf)] = 999
        elif kind == "striped" and rf >= 4:
            east, west = [x for x in r if x in b["east"]], [x for x in r if x in b["west"]]
            r[:] = [x for pair in zip(east, west, strict=False) for x in pair] + east[len(west) :] + west[len(east) :]
        elif kind == "short":
            r.pop()
        elif kind == "extra" and len(every) > rf:
            r.append(rnd.choice([x for x in every if x not in r]))
    return out


@settings(max_examples=100, deadline=None)
@given(shapes, st.randoms(use_true_random=False))
def test_a_converge_keeps_a_layout_that_meets_the_rules_whatever_the_other_topics_hold(shape, rnd):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    laid_out = place(b, rf, partitions, load=some_load(b, rnd))
    assert violations(laid_out, b) == []
    assert place(b, rf, partitions, current=laid_out, load=some_load(b, rnd)) == laid_out


@settings(max_examples=120, deadline=None)
@given(shapes, st.randoms(use_true_random=False))
def test_a_converge_copies_only_into_partitions_off_the_rules_never_reads_the_load_and_is_final(shape, rnd):
    n_a, n_b, rf, partitions = shape
    b = brokers(n_a, n_b)
    current = damaged(place(b, rf, partitions, load=some_load(b, rnd)), b, rf, rnd)
    after = place(b, rf, partitions, current=current, load=some_load(b, rnd))
    assert after == place(b, rf, partitions, current=current), "the other topics' load changed the layout"
    for p, replicas in current.items():
        if sound(replicas, rf, b):
            assert set(after[p]) == set(replicas), f"partition {p} met the rules and had its replicas moved"
    assert all(sound(r, rf, b) for r in after.values())
    assert not [v for v in violations(after, b) if "partition" in v]
    assert place(b, rf, partitions, current=after) == after, "a second converge changed the topic"


def test_the_reported_move_is_gone():
    """load-7 met every rule; a converge after other topics came and went rewrote one of its partitions."""
    b = {"dc1": [1001, 1002, 1003], "dc2": [2001, 2002]}
    topic = {
        0: [1003, 1002, 2002, 2001], 1: [2002, 2001, 1003, 1001], 2: [1002, 1003, 2001, 2002],
        3: [2001, 2002, 1001, 1003], 4: [1001, 1002, 2002, 2001], 5: [2002, 2001, 1003, 1002],
    }  # fmt: skip
    assert violations(topic, b) == []
    assert place(b, 4, 6, current=topic, load=cluster_load([{0: [1001, 1002, 2001, 2002]}])) == topic


def _calls(call):
    """The Python and built-in function calls call() makes (a count, the same on any machine however busy), and what
    it returns."""
    made, outer = 0, sys.getprofile()

    def count(frame, event, arg):
        nonlocal made
        made += event in ("call", "c_call")

    sys.setprofile(count)
    try:
        result = call()
    finally:
        sys.setprofile(outer)
    return made, result


def _cost(partitions):
    """The calls one topic of `partitions` (RF 4, 3+3 brokers, a broker then added) takes to be laid out, converged
    and balanced; each step's result is checked as it goes."""
    before, after = brokers(3, 3), brokers(4, 3)
    laid_out, current = _calls(lambda: place(before, 4, partitions))
    converged, layout = _calls(lambda: place(after, 4, partitions, current=current))
    balanced, even = _calls(lambda: place(after, 4, partitions, current=current, balance=True))
    assert not violations(even, after)
    assert layout == current  # every list meets the rules: a converge copies nothing to the new broker
    return {"laid out": laid_out, "converged": converged, "balanced": balanced}


def test_a_large_topic_is_placed_converged_and_balanced_in_work_that_grows_linearly_with_its_partitions():
    """Four times the partitions, at most six times the calls, for each step. A step that compared every partition
    with every other (the leading DCs' counts, the partitions a balancing copy could take) made 500 -> 2,000
    partitions cost 12 times the calls to converge and 11 times to balance. Calls, not seconds: a count is the same on
    a busy machine. (A step that grew by work making no call, such as `in` over a list, would not show here.)"""
    small, large = _cost(500), _cost(2_000)
    growth = {step: large[step] / small[step] for step in small}
    assert all(ratio < 6 for ratio in growth.values()), growth
