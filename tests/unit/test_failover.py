"""A DC failover: which of the DC's nodes the run stopped or could not reach, and what it relaxes and records."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import failover_moment
from ansible_collections.stretch.kafka.plugins.module_utils.failover import (
    FailoverError,
    effective_min_isr,
    merge_record,
    plan,
    refusal,
    restore_values,
)

REPO = Path(__file__).resolve().parents[2]


def node(host, stopped_at=None):
    return {"inventory_hostname": host, **({"kafka_node_stopped_at": stopped_at} if stopped_at is not None else {})}


def test_the_nodes_the_run_stopped_and_those_it_could_not_reach_are_named():
    # Before, the unreachable node's missing stop time failed the run as an undefined variable.
    moment = failover_moment([node("b1", 100.0), node("b2"), node("c1", "")])
    assert moment == {"stopped": ["b1"], "unreachable": ["b2", "c1"]}


def test_no_moment_of_the_runs_own_times_the_loss():
    # The outage is timed from Kafka's record only: before, a DC none of whose nodes answered was timed from when
    # the run found it down (its own clock), and a stopped one from systemd's stop on the node.
    assert failover_moment([node("b1"), node("b2")]) == {"stopped": [], "unreachable": ["b1", "b2"]}
    assert failover_moment([node("b1", "100.5"), node("c1", 99.25)]) == {"stopped": ["b1", "c1"], "unreachable": []}


# -- what a failover relaxes: every topic's min.insync.replicas against the replicas outside the lost DC ------------
LOST = [201, 202]
PLACED = {p: [101, 201, 102, 202] for p in range(4)}  # two replicas in each broker DC


def reply(name, value, source=5, error=0):
    """A DescribeConfigs result for a topic, as Admin.topic_config_replies gives it (source 1: the topic's own;
    3: the cluster-wide dynamic value; 5: Kafka's default)."""
    configs = [{"name": "retention.ms", "value": "604800000", "source": 5}]
    if value is not None:
        configs.append({"name": "min.insync.replicas", "value": str(value), "source": source})
    return {"name": name, "error_code": error, "error_message": "UNKNOWN_TOPIC_OR_PARTITION" if error else None,
            "configs": [] if error else configs}  # fmt: skip


def topics(**placements):
    return {name: {"partitions": parts, "internal": name.startswith("__")} for name, parts in placements.items()}


STRICT = topics(load=PLACED, strict=PLACED, stretch_probe=PLACED, __consumer_offsets=PLACED,
                __transaction_state=PLACED)  # fmt: skip
STRICT_REPLIES = [reply("load", 3, 3), reply("strict", 3, 1), reply("stretch_probe", 3, 3),
                  reply("__consumer_offsets", 3, 3), reply("__transaction_state", 3, 1)]  # fmt: skip


def test_the_topics_own_min_isr_is_read_for_every_topic_internal_ones_included():
    found = effective_min_isr(STRICT_REPLIES, STRICT)
    assert found["strict"] == {"value": 3, "own": True}
    assert found["__transaction_state"] == {"value": 3, "own": True}
    assert found["__consumer_offsets"] == {"value": 3, "own": False}


@pytest.mark.parametrize(
    ("replies", "named"),
    [
        (STRICT_REPLIES[:-1], "__transaction_state: missing from the reply"),
        ([*STRICT_REPLIES[:-1], reply("__transaction_state", 3, error=3)], "__transaction_state: UNKNOWN_TOPIC"),
        ([*STRICT_REPLIES[:-1], reply("__transaction_state", None)], "__transaction_state: no min.insync.replicas"),
        ([], "load: missing from the reply"),
    ],
)
def test_a_partial_or_missing_reply_fails_closed_naming_the_topic(replies, named):
    with pytest.raises(FailoverError, match="cannot read the min.insync.replicas of every topic") as refused:
        effective_min_isr(replies, STRICT)
    assert named in str(refused.value)


def test_a_strict_failover_relaxes_the_cluster_and_every_topics_own_value_above_the_target():
    # Before, only the cluster-wide value was lowered: "strict" (its own 3) and __transaction_state (its own 3,
    # transaction.state.log.min.isr) stayed unwritable, every transactional producer blocked, and the run passed.
    found = plan(STRICT, effective_min_isr(STRICT_REPLIES, STRICT), LOST, 2, cluster_relaxed=True, dc="dc2")
    assert found["relax"] == {"__transaction_state": 3, "strict": 3}
    assert found["lower"] == {"__transaction_state": 2, "strict": 2}
    assert set(found["after"].values()) == {2}
    assert found["unwritable"] == []
    assert found["transactions"] is True
    assert refusal(found, "dc2", 2) == ""


def test_a_topics_own_value_at_or_under_the_target_is_left_alone():
    replies = [reply("load", 2, 3), reply("strict", 2, 1), reply("stretch_probe", 2, 3),
               reply("__consumer_offsets", 2, 3), reply("__transaction_state", 2, 1)]  # fmt: skip
    found = plan(STRICT, effective_min_isr(replies, STRICT), LOST, 2, cluster_relaxed=False, dc="dc2")
    assert (found["relax"], found["unwritable"], found["transactions"]) == ({}, [], False)


def test_a_topic_that_would_stay_unwritable_is_refused_by_name_before_anything_is_relaxed():
    # A topic placed three replicas in dc2 and one in dc1 (an application created it), and a topic with its own
    # min ISR 3 while the failover's target is 3 (nothing can be lowered).
    skewed = {0: [201, 202, 203, 101], 1: [101, 201, 102, 202]}
    found = plan({**STRICT, "app": {"partitions": skewed, "internal": False}},
                 {**effective_min_isr(STRICT_REPLIES, STRICT), "app": {"value": 2, "own": False}},
                 [201, 202, 203], 2, cluster_relaxed=True, dc="dc2")  # fmt: skip
    assert found["unwritable"] == ["app (1 partition(s), 0: as few as 1 replica(s) outside dc2, under its "
                                   "min.insync.replicas 2)"]  # fmt: skip
    message = refusal(found, "dc2", 2)
    assert message.startswith("1 topic(s) would stay unwritable without dc2 even at min.insync.replicas 2: app (")
    assert "Nothing was relaxed" in message
    kept = plan(STRICT, effective_min_isr(STRICT_REPLIES, STRICT), LOST, 3, cluster_relaxed=False, dc="dc2")
    assert [u.split(" ")[0] for u in kept["unwritable"]] == sorted(STRICT)


def test_kafka_holds_a_partition_to_the_fewer_of_its_min_isr_and_its_replicas():
    # An RF-1 topic in dc1 at the cluster's min ISR 2 takes acks=all writes (Kafka caps the value at its replicas),
    # with dc2 lost as before; one in dc2 has no replica left.
    single = topics(here={0: [101]}, gone={0: [201]})
    found = plan(single, {"here": {"value": 2, "own": False}, "gone": {"value": 2, "own": False}}, LOST, 2, False,
                 "dc2")  # fmt: skip
    assert found["unwritable"] == ["gone (1 partition(s), 0: as few as 0 replica(s) outside dc2, under its "
                                   "min.insync.replicas 2)"]  # fmt: skip


def test_the_record_keeps_each_topics_value_from_before_the_first_relaxation():
    first = merge_record("dc2", [None, None], {"strict": 3, "__transaction_state": 3})
    assert first == {"dc": "dc2", "topics": {"__transaction_state": 3, "strict": 3}}
    # A second run finds "strict" at 2 already: the record it writes keeps 3, and adds what it lowers now.
    again = merge_record("dc2", [first, first], {"other": 4})
    assert again["topics"] == {"__transaction_state": 3, "other": 4, "strict": 3}
    assert restore_values("dc2", [again, None]) == {"__transaction_state": 3, "other": 4, "strict": 3}
    assert restore_values("dc2", [None]) == {}


def test_records_that_disagree_or_are_of_another_dc_are_never_restored_on_a_guess():
    with pytest.raises(FailoverError, match=r"strict: 3 in one record, 4 in another"):
        restore_values("dc2", [{"dc": "dc2", "topics": {"strict": 3}}, {"dc": "dc2", "topics": {"strict": 4}}])
    with pytest.raises(FailoverError, match=r"a record of 'dc1' where 'dc2'"):
        restore_values("dc2", [{"dc": "dc1", "topics": {"strict": 3}}])


# -- the playbook: Kafka's record of the outage is always read, and what is lowered is recorded first ----------------
def plays(name):
    return yaml.safe_load((REPO / "playbooks" / name).read_text())


def test_the_failover_always_reads_kafkas_record_of_the_outage_and_says_what_it_found():
    # Before, the metadata log's play was skipped, without a line, when the quorum gave no start of the loss.
    [record] = [p for p in plays("dc_failover.yml") if "metadata log" in p["name"]]
    assert [t.get("when") for t in record["tasks"]] == [None, None]
    assert [t["ansible.builtin.include_role"]["tasks_from"] for t in record["tasks"]] == [
        "metadata_record.yml",
        "failover_record.yml",
    ]


def test_the_failover_records_the_topics_own_values_before_it_relaxes_them_and_the_recovery_puts_them_back():
    names = [p["name"] for p in plays("dc_failover.yml")]
    record = next(i for i, n in enumerate(names) if n.startswith("Record on the surviving controllers"))
    relax = next(i for i, n in enumerate(names) if n.startswith("Relax what the plan names"))
    plan = next(i for i, n in enumerate(names) if n.startswith("Confirm in Kafka's view"))
    assert plan < record < relax
    recovery = [p["name"] for p in plays("dc_recovery.yml")]
    assert recovery.index("Read what the DC's failover lowered, from the surviving controllers' records") < (
        recovery.index("Start every node of the DC")
    )
    assert recovery[-1] == "Remove the record of the failover, its values put back"
