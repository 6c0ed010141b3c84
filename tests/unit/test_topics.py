"""Topics as code: validation of the declarations and the reconcile plan."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import placement
from ansible_collections.stretch.kafka.plugins.module_utils.topics import (
    TopicError,
    is_empty,
    normalize,
    off_balance,
    plan,
    summary,
    throttle_plan,
    throttled_replicas,
)

BROKERS = {"dc1": [101, 102], "dc2": [201, 202]}


def declared(*items):
    return normalize(list(items), 4)


def existing(assignment, configs=None):
    return {"partitions": dict(enumerate(assignment)), "configs": configs or {}, "internal": False}


def test_a_new_topic_is_created_with_the_dc_grouped_placement_and_its_configs():
    changes = plan(declared({"name": "orders", "partitions": 4, "configs": {"retention.ms": 60000}}), {}, BROKERS)
    create = changes["create"]["orders"]
    assert create["assignment"] == dict(enumerate(placement.ideal(BROKERS, 4, 4)))
    assert create["configs"] == {"retention.ms": "60000"}
    assert not placement.violations(create["assignment"], BROKERS)


def test_a_topic_as_declared_needs_no_change():
    current = {"orders": existing(placement.ideal(BROKERS, 4, 4), {"retention.ms": "60000"})}
    changes = plan(declared({"name": "orders", "partitions": 4, "configs": {"retention.ms": 60000}}), current, BROKERS)
    assert is_empty(changes)


def test_config_drift_is_set_back_and_undeclared_configs_are_removed_but_throttles_are_not_drift():
    have = {"retention.ms": "1000", "segment.ms": "5", "leader.replication.throttled.replicas": "*"}
    current = {"orders": existing(placement.ideal(BROKERS, 4, 4), have)}
    changes = plan(declared({"name": "orders", "partitions": 4, "configs": {"retention.ms": 60000}}), current, BROKERS)
    assert changes["configs"] == {"orders": {"set": {"retention.ms": "60000"}, "delete": ["segment.ms"]}}
    assert not changes["reassign"]


def test_growing_a_topic_adds_placed_partitions_and_moves_nothing():
    before = placement.ideal(BROKERS, 4, 4)
    changes = plan(declared({"name": "orders", "partitions": 8}), {"orders": existing(before)}, BROKERS)
    assert changes["grow"]["orders"]["count"] == 8
    assert not changes["reassign"]
    assert not placement.violations(dict(enumerate(before + changes["grow"]["orders"]["assignments"])), BROKERS)


THREE_AND_TWO = {"dc1": [1001, 1002, 1003], "dc2": [2001, 2002]}


@pytest.mark.parametrize("brokers", [BROKERS, THREE_AND_TWO], ids=["2+2", "3+2"])
def test_a_topic_placed_among_others_is_left_alone_once_they_are_gone(brokers):
    """A converge made the topic against an undeclared topic's load; that topic went; the next converge moves
    nothing."""
    first, second = sorted(brokers)
    crowd = existing([[brokers[first][0], brokers[first][1], brokers[second][0], brokers[second][1]]] * 12)
    orders = declared({"name": "orders", "partitions": 6})
    created = plan(orders, {"crowd": crowd}, brokers)["create"]["orders"]["assignment"]
    assert not placement.violations(created, brokers)
    now = {"orders": existing([created[p] for p in sorted(created)])}
    assert is_empty(plan(orders, now, brokers)), summary(plan(orders, now, brokers), now)
    # Nor does another undeclared topic coming change the declared one.
    other = existing(placement.ideal(brokers, 4, 7))
    assert is_empty(plan(orders, {**now, "other": other}, brokers))


def test_a_broker_added_gets_no_replica_until_balancing_is_asked_for_and_is_named_meanwhile():
    before = {"orders": existing(placement.ideal({"dc1": [1001, 1002], "dc2": [2001, 2002]}, 4, 8))}
    orders = declared({"name": "orders", "partitions": 8})
    converge = plan(orders, before, THREE_AND_TWO)
    assert is_empty(converge)
    assert off_balance(before, converge, THREE_AND_TWO, ["orders"]) == {
        "orders": ["preferred leaders per broker in DC dc1 differ by more than 1: [2, 2, 0]"]
    }
    balanced = plan(orders, before, THREE_AND_TWO, balance=True)
    moves = balanced["reassign"]["orders"]
    assert moves
    assert all(set(r) - set(before["orders"]["partitions"][p]) == {1003} for p, r in moves.items())
    assert off_balance(before, balanced, THREE_AND_TWO, ["orders"]) == {}


def test_kafkas_alternating_placement_is_moved_onto_the_dc_grouped_one_without_copying_data():
    striped = [[202, 102, 201, 101], [101, 201, 102, 202], [202, 102, 201, 101], [101, 201, 102, 202]]
    current = {"legacy": existing(striped)}
    changes = plan(declared({"name": "legacy", "partitions": 4}), current, BROKERS)
    moves = changes["reassign"]["legacy"]
    after = {p: moves.get(p, r) for p, r in current["legacy"]["partitions"].items()}
    assert not placement.violations(after, BROKERS)
    assert placement.moved_replicas(current["legacy"]["partitions"], after) == 0
    assert throttled_replicas(changes["reassign"], current) == {}, "a reorder copies nothing, so needs no throttle"


def test_raising_the_replication_factor_throttles_only_the_added_replicas():
    current = {"legacy": existing([[101, 201, 102], [202, 101, 201]])}
    changes = plan(declared({"name": "legacy", "partitions": 2}), current, BROKERS)
    moves = changes["reassign"]["legacy"]
    assert placement.moved_replicas(current["legacy"]["partitions"], moves) == 2  # one added replica each
    throttle = throttled_replicas(changes["reassign"], current)["legacy"]
    assert throttle["leader.replication.throttled.replicas"] == "0:101,0:201,0:102,1:202,1:101,1:201"
    assert throttle["follower.replication.throttled.replicas"] == "0:202,1:102"


RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


def test_a_move_sets_rates_where_none_holds_and_keeps_the_recovery_throttles_cluster_wide_ones():
    current = {"legacy": existing([[101, 201, 102], [202, 101, 201]])}
    moves = plan(declared({"name": "legacy", "partitions": 2}), current, BROKERS)["reassign"]
    # No throttle on: the move sets its rate on each broker and takes it off again after.
    bare = throttle_plan(moves, current, [101, 201], 50, {101: {}, 201: {}}, {"legacy": {}}, {})
    assert bare["apply"]["brokers"] == {b: {"set": dict.fromkeys(RATES, "50"), "delete": []} for b in (101, 201)}
    assert bare["restore"]["brokers"] == {b: {"set": {}, "delete": list(RATES)} for b in (101, 201)}
    # A recovery throttle on: its cluster-wide rates hold for every broker, so the move sets none and removes none.
    recovery = {**dict.fromkeys(RATES, "70"), "min.insync.replicas": "2"}
    star = {"legacy": {"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "*"}}
    kept = throttle_plan(moves, current, [101, 201], 50, {101: {}, 201: {}}, star, recovery)
    assert kept == {"apply": {"brokers": {}, "topics": {}}, "restore": {"brokers": {}, "topics": {}}}


def test_undeclared_topics_are_deleted_only_when_asked_and_internal_ones_never():
    current = {"stray": existing([[101, 102, 201, 202]]), "__consumer_offsets": existing([[101, 102, 201, 202]])}
    assert plan({}, current, BROKERS)["delete"] == []
    assert plan({}, current, BROKERS, remove_undeclared=True)["delete"] == ["stray"]


def test_internal_topics_are_placed_as_they_are_when_asked():
    striped = [[101, 201, 102, 202]] * 4
    current = {"__consumer_offsets": existing(striped, {"cleanup.policy": "compact"})}
    changes = plan({}, current, BROKERS, internal=["__consumer_offsets"])
    assert set(changes["reassign"]["__consumer_offsets"]) == {0, 1, 2, 3}
    assert not changes["configs"], "an internal topic's configs are not managed"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"name": "a b", "partitions": 1}, "'a b' is not a valid topic name"),
        ({"name": "orders\n", "partitions": 1}, "'orders\\n' is not a valid topic name"),
        ({"name": "t", "partitions": 0}, "topic 't': partitions must be a positive whole number, got 0"),
        ({"name": "t", "partitions": 1, "replicas": 4}, "topic 't': unknown field(s) ['replicas']"),
        ({"name": "t", "partitions": 1, "configs": ["x"]}, "topic 't': configs must be a mapping"),
        ({"name": "__consumer_offsets", "partitions": 1}, "internal topics are not declared"),
        (
            {"name": "t", "partitions": 1, "configs": {"leader.replication.throttled.replicas": "*"}},
            "belong to the replication throttle",
        ),
    ],
)
def test_bad_declarations_are_refused_naming_the_topic(item, message):
    with pytest.raises(TopicError) as err:
        declared(item)
    assert message in str(err.value)


def test_a_topic_declared_twice_is_refused():
    with pytest.raises(TopicError, match="topic 't' is declared more than once"):
        declared({"name": "t", "partitions": 1}, {"name": "t", "partitions": 2})


def test_every_topic_that_cannot_be_reconciled_is_named_and_nothing_is_planned():
    current = {"shrink": existing(placement.ideal(BROKERS, 4, 8))}
    topics = declared(
        {"name": "shrink", "partitions": 4},
        {"name": "wide", "partitions": 1, "replication_factor": 6},
        {"name": "fine", "partitions": 1},
    )
    with pytest.raises(TopicError) as err:
        plan(topics, current, BROKERS)
    message = str(err.value)
    assert "topic 'shrink': partitions cannot go down from 8 to 4" in message
    assert "topic 'wide': replication factor 6 is larger than the 4 brokers" in message


def test_the_summary_names_each_change():
    current = {"orders": existing(placement.ideal(BROKERS, 4, 2), {"segment.ms": "5"})}
    changes = plan(declared({"name": "orders", "partitions": 3}, {"name": "new", "partitions": 1}), current, BROKERS)
    lines = summary(changes, current)
    assert lines[0].startswith("create new: 1 partitions")
    assert "configs orders: set {}, remove ['segment.ms']" in lines
    assert "partitions orders: 2 -> 3" in lines


def test_retiring_a_broker_is_refused_when_its_dc_or_a_topic_would_no_longer_fit():
    from ansible_collections.stretch.kafka.plugins.module_utils.topics import normalize, retire_refusals

    two_two = [{"node_id": 101, "dc": "dc1"}, {"node_id": 102, "dc": "dc1"},
               {"node_id": 201, "dc": "dc2"}, {"node_id": 202, "dc": "dc2"}]  # fmt: skip
    declared = normalize([{"name": "orders", "partitions": 3}], 4)
    assert retire_refusals(declared, two_two, 102) == [
        "without broker 102: DC dc1 has 1 broker(s); each DC needs at least 2"
    ]
    three_two = [*two_two, {"node_id": 103, "dc": "dc1"}]
    assert retire_refusals(declared, three_two, 103) == []
    assert retire_refusals(declared, three_two, 101) == []
    wide = normalize([{"name": "wide", "partitions": 1, "replication_factor": 5}], 4)
    assert retire_refusals(wide, three_two, 101) == [
        "without broker 101: replication factor 5 is larger than the 4 brokers (topics wide)"
    ]
    assert retire_refusals(declared, three_two, 7) == ["broker 7 is not one of the inventory's brokers"]
    one_dc = [{"node_id": 101, "dc": "dc1"}, {"node_id": 102, "dc": "dc1"}, {"node_id": 201, "dc": "dc2"}]
    assert retire_refusals(declared, one_dc, 201) == [
        "without broker 201: placement needs exactly 2 broker DCs, got 1: ['dc1']"
    ]


def test_a_broker_is_drained_when_it_holds_no_replica_and_nothing_is_short():
    from ansible_collections.stretch.kafka.plugins.module_utils.gates import check

    FOUR = [101, 102, 201, 202]  # noqa: N806  a constant of this test
    snap = {
        "partitions": [
            {"topic": "t", "partition": 0, "leader": 101, "replicas": FOUR, "isr": FOUR},
            {"topic": "t", "partition": 1, "leader": 201, "replicas": [201, 202, 101, 102], "isr": [201, 202, 101]},
        ],
        "min_isr": {"t": 2}, "errors": [], "quorum": None, "brokers": None,
    }  # fmt: skip
    assert check("broker_drained", snap, {}, 103) == ["1 under-replicated partition(s): t-1"]
    assert check("broker_drained", snap, {}, 102) == [
        "2 partition(s) with a replica on broker 102: t-0, t-1",
        "1 under-replicated partition(s): t-1",
    ]
