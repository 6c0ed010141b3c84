"""The rolling restart's health gates and its order, on crafted cluster snapshots."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.gates import GateError, check, restart_order

ALL = [101, 102, 201, 202]


def snapshot(isr=None, leader=101, quorum_leader=1, voters=None, brokers=None, min_isr=2):
    isr = {0: ALL, 1: ALL} if isr is None else isr
    return {
        "partitions": [
            {"topic": "t", "partition": p, "leader": leader, "replicas": ALL, "isr": members}
            for p, members in isr.items()
        ],
        "min_isr": {"t": min_isr},
        "brokers": brokers if brokers is not None else {b: {"rack": "x", "fenced": False} for b in ALL},
        "quorum": {"leader": quorum_leader, "voters": voters if voters is not None else {1: 50, 2: 50, 3: 50}},
    }


def test_a_healthy_cluster_passes_every_gate():
    healthy = snapshot()
    for gate, node in (("broker_down_safe", 101), ("broker_back", 101), ("controller_down_safe", 1),
                       ("controller_back", 1), ("cluster_healthy", None)):  # fmt: skip
        assert check(gate, healthy, node) == [], gate


def test_a_broker_whose_loss_would_leave_a_partition_under_min_isr_may_not_go_down():
    two_left = snapshot(isr={0: ALL, 1: [101, 201]})
    assert check("broker_down_safe", two_left, 101) == [
        "1 partition(s) that would go under min.insync.replicas without broker 101: t-1"
    ]
    assert check("broker_down_safe", two_left, 102) == [], "102 is not in t-1's ISR"


def test_offline_and_under_min_isr_partitions_block_any_broker():
    problems = check("broker_down_safe", snapshot(isr={0: [201], 1: ALL}, leader=-1), 102)
    assert problems[0] == "2 offline partition(s): t-0, t-1"
    assert problems[1] == "1 partition(s) under min.insync.replicas: t-0"


def test_no_quorum_leader_blocks_a_broker():
    assert check("broker_down_safe", snapshot(quorum_leader=-1), 101) == ["the quorum has no leader"]


def test_a_restarted_broker_is_back_only_when_unfenced_and_in_every_isr():
    fenced = {b: {"rack": "x", "fenced": b == 101} for b in ALL}
    assert check("broker_back", snapshot(brokers=fenced), 101) == ["broker 101 is fenced"]
    gone = {b: {"rack": "x", "fenced": False} for b in ALL if b != 101}
    assert check("broker_back", snapshot(brokers=gone), 101)[0] == "broker 101 is not registered"
    catching_up = snapshot(isr={0: [102, 201, 202], 1: ALL})
    assert check("broker_back", catching_up, 101) == [
        "1 partition(s) without broker 101 in the ISR: t-0",
        "1 under-replicated partition(s): t-0",
    ]


def test_a_controller_goes_down_only_when_the_other_voters_have_caught_up():
    lagging = snapshot(voters={1: 50, 2: 40, 3: 50})
    assert check("controller_down_safe", lagging, 3) == ["voter 2 is 10 records behind the leader"]
    assert check("controller_down_safe", lagging, 2) == [], "its own lag does not block it"
    assert check("controller_down_safe", lagging, 3, max_lag=10) == []


def test_a_restarted_controller_is_back_when_it_is_a_caught_up_voter():
    assert check("controller_back", snapshot(voters={1: 50, 3: 50}), 2) == ["controller 2 is not a voter"]
    assert check("controller_back", snapshot(voters={1: 50, 2: 7, 3: 50}), 2) == [
        "voter 2 is 43 records behind the leader"
    ]


def test_many_partitions_are_counted_and_a_few_named():
    isr = {p: [101, 102, 201] for p in range(8)}
    assert check("cluster_healthy", snapshot(isr=isr)) == [
        "8 under-replicated partition(s): t-0, t-1, t-2, t-3, t-4 and 3 more"
    ]


def test_a_cluster_that_lost_a_dc_is_writable_but_not_healthy():
    dc_lost = snapshot(
        isr={0: [101, 102], 1: [101, 102]},
        brokers={101: {"rack": "dc1", "fenced": False}, 102: {"rack": "dc1", "fenced": False}},
        voters={1: 50, 2: 20, 3: 50},
    )
    assert check("writable", dc_lost) == []
    assert check("cluster_healthy", dc_lost) == [
        "voter 2 is 30 records behind the leader",
        "2 under-replicated partition(s): t-0, t-1",
    ]
    assert check("writable", snapshot(isr={0: [101], 1: ALL})) == ["1 partition(s) under min.insync.replicas: t-0"]


def test_an_unknown_gate_is_refused():
    with pytest.raises(GateError, match="unknown gate 'ready'"):
        check("ready", snapshot())


CONTROLLERS = [
    {"host": "c1", "node_id": 1, "rack": "dc1"},
    {"host": "c2", "node_id": 2, "rack": "dc2"},
    {"host": "c3", "node_id": 3, "rack": "dc3"},
]
BROKERS = [
    {"host": "b11", "node_id": 101, "rack": "dc1"},
    {"host": "b12", "node_id": 102, "rack": "dc1"},
    {"host": "b21", "node_id": 201, "rack": "dc2"},
]


def test_controllers_go_first_and_the_active_one_last_then_the_brokers():
    assert restart_order(CONTROLLERS, BROKERS, active_controller=1) == ["c2", "c3", "c1", "b11", "b12", "b21"]
    assert restart_order(CONTROLLERS, BROKERS, active_controller=3)[:3] == ["c1", "c2", "c3"]


def test_the_restart_can_be_limited_to_a_dc_or_to_hosts():
    assert restart_order(CONTROLLERS, BROKERS, 1, dcs=["dc1"]) == ["c1", "b11", "b12"]
    assert restart_order(CONTROLLERS, BROKERS, 1, hosts=["b21", "c3"]) == ["c3", "b21"]


def test_an_unknown_dc_or_host_is_refused_by_name():
    with pytest.raises(GateError, match=r"DC\(s\) \['dc9'\], the inventory has \['dc1', 'dc2', 'dc3'\]"):
        restart_order(CONTROLLERS, BROKERS, 1, dcs=["dc9"])
    with pytest.raises(GateError, match=r"host\(s\) \['b99'\] not in kafka_controllers or kafka_brokers"):
        restart_order(CONTROLLERS, BROKERS, 1, hosts=["b99"])
