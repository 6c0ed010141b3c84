"""Voter changes: the plan for each action, the refusals, the blockers a wait clears, the check of the result."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import kafka_uuid, quorum_state
from ansible_collections.stretch.kafka.plugins.module_utils.quorum import (
    QuorumChangeError,
    blockers,
    plan,
    settled,
    wait,
)

NODES = [
    {"host": "dc1-controller", "node_id": 1, "dc": "dc1"},
    {"host": "dc2-controller", "node_id": 2, "dc": "dc2"},
    {"host": "dc3-controller", "node_id": 3, "dc": "dc3"},
]
DIRS = {1: "AAAAAAAAAAAAAAAAAAAAAQ", 2: "AAAAAAAAAAAAAAAAAAAAAg", 3: "AAAAAAAAAAAAAAAAAAAAAw"}
NEW = "BBBBBBBBBBBBBBBBBBBBBw"


def quorum(voters=None, observers=(), leader=1, hw=None):
    """voters/observers: [(id, directory id, log end offset)]."""
    voters = voters if voters is not None else [(v, DIRS[v], 100) for v in (1, 2, 3)]

    def rows(items):
        return [{"id": i, "directory_id": d, "log_end_offset": e} for i, d, e in items]

    ends = {i: e for i, _, e in voters}
    return {
        "leader": leader,
        "epoch": 7,
        "high_watermark": ends.get(leader, 0) if hw is None else hw,
        "voters": ends,
        "observers": {i: e for i, _, e in observers},
        "replicas": {"voters": rows(voters), "observers": rows(observers)},
    }


def node(node_id, directory_id=None):
    return dict(NODES[node_id - 1], directory_id=directory_id)


def test_replacing_a_wiped_tiebreaker_removes_its_stale_key_then_adds_the_new_one():
    result = plan(quorum(), "replace", node(3, NEW), NODES)
    assert result["steps"] == [
        {"op": "remove", "id": 3, "directory_id": DIRS[3]},
        {"op": "add", "id": 3, "directory_id": NEW},
    ]
    assert result["voters_after"] == [[1, DIRS[1]], [2, DIRS[2]], [3, NEW]]


def test_a_controller_already_a_voter_with_its_directory_needs_nothing_for_add_or_replace():
    for action in ("add", "replace"):
        result = plan(quorum(), action, node(2, DIRS[2]), NODES)
        assert result["steps"] == []
        assert "already a voter" in result["notes"][0]


def test_add_refuses_a_node_whose_id_votes_with_another_directory_and_points_at_replace():
    with pytest.raises(
        QuorumChangeError, match=r"voter 3 \(directory AAAAAAAAAAAAAAAAAAAAAw\).*kafka_ops_quorum_action=replace"
    ):
        plan(quorum(), "add", node(3, NEW), NODES)


def test_add_or_replace_refuses_a_node_without_a_directory_id():
    with pytest.raises(QuorumChangeError, match="dc3-controller: no directory id"):
        plan(quorum(), "replace", node(3, ""), NODES)


def test_removing_the_tiebreaker_is_refused_because_two_dcs_are_left():
    with pytest.raises(QuorumChangeError, match=r"remove of controller 3 .* voters \[1, 2\]: controllers span 2 DC"):
        plan(quorum(), "remove", node(3), NODES)


def test_adding_a_second_voter_to_a_dc_of_a_1_1_1_quorum_is_refused_half_is_no_majority():
    nodes = [*NODES, {"host": "dc1-controller2", "node_id": 4, "dc": "dc1"}]
    with pytest.raises(QuorumChangeError, match="DC dc1 holds 2 of 4 controller voters"):
        plan(quorum(), "add", {**nodes[3], "directory_id": NEW}, nodes)


def test_adding_a_fifth_voter_to_a_2_1_1_quorum_gives_2_2_1_and_is_planned():
    nodes = [*NODES, {"host": "dc1-c2", "node_id": 4, "dc": "dc1"}, {"host": "dc2-c2", "node_id": 5, "dc": "dc2"}]
    four = quorum([(1, DIRS[1], 9), (2, DIRS[2], 9), (3, DIRS[3], 9), (4, "AAAAAAAAAAAAAAAAAAAABA", 9)])
    result = plan(four, "add", {**nodes[4], "directory_id": NEW}, nodes)
    assert result["steps"] == [{"op": "add", "id": 5, "directory_id": NEW}]


def test_removing_a_voter_the_inventory_dropped_is_planned_when_the_rest_keep_the_dc_rule():
    five = quorum([(i, f"AAAAAAAAAAAAAAAAAAAAA{i}", 9) for i in (1, 2, 3, 4)])
    nodes = [*NODES, {"host": "dc2-c2", "node_id": 5, "dc": "dc2"}]
    result = plan(five, "remove", {"host": "old", "node_id": 4}, nodes)
    assert result["steps"] == [{"op": "remove", "id": 4, "directory_id": "AAAAAAAAAAAAAAAAAAAAA4"}]
    assert [k[0] for k in result["voters_after"]] == [1, 2, 3]


def test_a_change_leaving_a_voter_the_inventory_does_not_know_is_refused():
    stranger = quorum([(1, DIRS[1], 9), (2, DIRS[2], 9), (3, DIRS[3], 9), (9, "AAAAAAAAAAAAAAAAAAAACQ", 9)])
    with pytest.raises(QuorumChangeError, match=r"voter\(s\) \[9\] that the inventory does not declare"):
        plan(stranger, "replace", node(3, NEW), NODES)


def test_removing_a_controller_that_is_not_a_voter_is_a_no_op_with_a_note():
    two = quorum([(1, DIRS[1], 9), (2, DIRS[2], 9), (3, DIRS[3], 9)])
    result = plan(two, "remove", {"host": "gone", "node_id": 8}, NODES)
    assert result == {"steps": [], "voters_after": [[1, DIRS[1]], [2, DIRS[2]], [3, DIRS[3]]],
                      "notes": ["controller 8 (gone) is not a voter: nothing to remove"]}  # fmt: skip


def test_a_static_quorum_without_directory_ids_is_refused():
    static = quorum([(1, "", 9), (2, "", 9), (3, "", 9)])
    with pytest.raises(QuorumChangeError, match="the quorum is static"):
        plan(static, "replace", node(3, NEW), NODES)
    with pytest.raises(QuorumChangeError, match="no voters"):
        plan(quorum(voters=[]), "replace", node(3, NEW), NODES)


def test_an_unknown_action_is_refused():
    with pytest.raises(QuorumChangeError, match="unknown quorum action 'swap'"):
        plan(quorum(), "swap", node(3, NEW), NODES)


# -- blockers ------------------------------------------------------------------
ADD = {"op": "add", "id": 3, "directory_id": NEW}
REMOVE_STALE = {"op": "remove", "id": 3, "directory_id": DIRS[3]}


def test_add_waits_until_the_new_controller_is_an_observer_and_has_caught_up():
    stale = [(1, DIRS[1], 500), (2, DIRS[2], 500)]
    assert blockers(quorum(stale), ADD, 5) == [f"controller 3 (directory {NEW}) is not an observer of the quorum yet"]
    assert blockers(quorum(stale, observers=[(3, NEW, 200)]), ADD, 5) == [
        f"observer 3 (directory {NEW}) is 300 records behind the leader"
    ]
    assert blockers(quorum(stale, observers=[(3, NEW, 498)]), ADD, 5) == []


def test_removing_a_dead_voter_is_safe_while_the_others_are_a_caught_up_majority():
    dead_tiebreaker = quorum([(1, DIRS[1], 500), (2, DIRS[2], 499), (3, DIRS[3], 20)])
    assert blockers(dead_tiebreaker, REMOVE_STALE, 5) == []


def test_a_removal_that_leaves_no_caught_up_majority_is_blocked():
    one_behind = quorum([(1, DIRS[1], 500), (2, DIRS[2], 20), (3, DIRS[3], 20)])
    assert blockers(one_behind, REMOVE_STALE, 5) == [
        f"removing 3 (directory {DIRS[3]}) needs a caught-up majority of voters [1, 2], but [2] are behind or silent"
    ]


def test_nothing_is_changed_in_a_quorum_without_a_leader():
    assert blockers(quorum(leader=-1), ADD, 5) == ["the quorum has no leader"]
    assert settled(quorum(leader=-1), [], 5) == ["the quorum has no leader"]


# -- the result ----------------------------------------------------------------
AFTER = [[1, DIRS[1]], [2, DIRS[2]], [3, NEW]]


def test_the_change_is_settled_when_the_voters_are_the_planned_keys_caught_up_and_committed():
    done = quorum([(1, DIRS[1], 900), (2, DIRS[2], 900), (3, NEW, 899)])
    assert settled(done, AFTER, 5) == []


def test_an_unfinished_change_names_what_is_missing():
    half = quorum([(1, DIRS[1], 900), (2, DIRS[2], 900)], observers=[(3, NEW, 900)])
    assert settled(half, AFTER, 5) == [
        f"voters are ['1 (directory {DIRS[1]})', '2 (directory {DIRS[2]})'], expected "
        f"['1 (directory {DIRS[1]})', '2 (directory {DIRS[2]})', '3 (directory {NEW})']"
    ]
    lagging = quorum([(1, DIRS[1], 900), (2, DIRS[2], 900), (3, NEW, 100)], hw=880)
    assert settled(lagging, AFTER, 5) == [
        f"voter 3 (directory {NEW}) is 800 records behind the leader",
        "the high watermark 880 trails the leader's log end 900: a change is not committed yet",
    ]


# -- the wait ------------------------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_wait_polls_until_the_judge_is_satisfied_and_reports_read_errors_as_problems():
    clock, replies = Clock(), [OSError("refused"), quorum(), quorum()]
    verdicts = iter([["not yet"], []])

    def read():
        reply = replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    result = wait(read, lambda q: next(verdicts), timeout=60, interval=2, clock=clock, sleep=clock.sleep)
    assert (result["passed"], result["polls"], result["waited"]) == (True, 3, 4.0)


def test_wait_gives_up_at_the_timeout_with_the_last_problems_and_stops_at_once_on_a_refusal():
    clock = Clock()
    result = wait(quorum, lambda q: ["observer behind"], timeout=10, interval=3, clock=clock, sleep=clock.sleep)
    assert (result["passed"], result["problems"], result["waited"]) == (False, ["observer behind"], 12.0)

    def refuse(q):
        raise QuorumChangeError("no")

    with pytest.raises(QuorumChangeError):
        wait(quorum, refuse, timeout=10, clock=clock, sleep=clock.sleep)


# -- the reply ---------------------------------------------------------------------
def test_the_describe_quorum_reply_is_read_with_directory_ids_as_kafka_prints_them():
    reply = {
        "leader_id": 2,
        "leader_epoch": 5,
        "high_watermark": 77,
        "current_voters": [
            {"replica_id": 2, "replica_directory_id": "00000000-0000-0000-0000-000000000002", "log_end_offset": 77}
        ],
        "observers": [{"replica_id": 101, "replica_directory_id": None, "log_end_offset": 70}],
    }
    state = quorum_state(reply)
    assert state["voters"] == {2: 77}
    assert state["observers"] == {101: 70}
    assert state["replicas"]["voters"] == [{"id": 2, "directory_id": "AAAAAAAAAAAAAAAAAAAAAg", "log_end_offset": 77}]
    assert state["replicas"]["observers"][0]["directory_id"] == ""
    assert kafka_uuid("00000000-0000-0000-0000-000000000000") == ""
    assert state["fetched"] == {2: -1, 101: -1}, "a reply without fetch times says so, as -1"


def test_the_describe_quorum_reply_keeps_when_each_voter_and_observer_last_fetched():
    reply = {
        "leader_id": 1,
        "leader_epoch": 5,
        "current_voters": [{"replica_id": 1, "log_end_offset": 9, "last_fetch_timestamp": 1000},
                           {"replica_id": 2, "log_end_offset": 9, "last_fetch_timestamp": 400}],
        "observers": [{"replica_id": 201, "log_end_offset": 9, "last_fetch_timestamp": 250}],
    }  # fmt: skip
    assert quorum_state(reply)["fetched"] == {1: 1000, 2: 400, 201: 250}


def test_the_precheck_refuses_by_voter_ids_before_the_new_controller_is_formatted():
    from ansible_collections.stretch.kafka.plugins.module_utils.quorum import precheck

    assert precheck(quorum(), "replace", node(3), NODES) == [1, 2, 3]
    with pytest.raises(QuorumChangeError, match="controllers span 2 DC"):
        precheck(quorum(), "remove", node(3), NODES)
    nodes = [*NODES, {"host": "dc1-controller2", "node_id": 4, "dc": "dc1"}]
    with pytest.raises(QuorumChangeError, match="DC dc1 holds 2 of 4"):
        precheck(quorum(), "add", nodes[3], nodes)
