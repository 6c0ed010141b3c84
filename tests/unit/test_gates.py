"""The health judge: every gate on crafted snapshots, failing closed, its poll, its report, and the restart order."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.gates import (
    GateError,
    check,
    elr_report,
    lost_by,
    lost_since,
    poll,
    registered,
    report,
    restart_order,
    topics_present,
)

ALL = [101, 102, 201, 202]
DC = {101: "dc1", 102: "dc1", 201: "dc2", 202: "dc2"}
EXPECTED = {"controllers": {1: "dc1", 2: "dc2", 3: "dc3"}, "brokers": DC, "topics": ["t"]}


def snapshot(isr=None, leader=101, quorum_leader=1, voters=None, brokers=None, min_isr=2):
    isr = {0: ALL, 1: ALL} if isr is None else isr
    return {
        "cluster_id": "abc",
        "partitions": [
            {"topic": "t", "partition": p, "leader": leader, "replicas": ALL, "isr": members}
            for p, members in isr.items()
        ],
        "min_isr": {"t": min_isr},
        "brokers": brokers if brokers is not None else {b: {"dc": DC[b], "fenced": False} for b in ALL},
        "quorum": {
            "leader": quorum_leader,
            "epoch": 4,
            "voters": voters if voters is not None else {1: 50, 2: 50, 3: 50},
            "observers": {},
        },
        "errors": [],
    }


def gate(name, snap, node=None, max_lag=0, expected=EXPECTED):
    return check(name, snap, expected, node, max_lag)


def test_a_healthy_cluster_passes_every_gate():
    healthy = snapshot()
    for name, node in (("broker_down_safe", 101), ("broker_back", 101), ("controller_down_safe", 1),
                       ("controller_back", 1), ("cluster_healthy", None), ("quorum_ready", None),
                       ("cluster_ready", None)):  # fmt: skip
        assert gate(name, healthy, node) == [], name


def test_a_broker_whose_loss_would_leave_a_partition_under_min_isr_may_not_go_down():
    two_left = snapshot(isr={0: ALL, 1: [101, 201]})
    assert gate("broker_down_safe", two_left, 101) == [
        "1 partition(s) that would go under min.insync.replicas without broker 101: t-1"
    ]
    assert gate("broker_down_safe", two_left, 102) == [], "102 is not in t-1's ISR"


def test_offline_and_under_min_isr_partitions_block_any_broker():
    problems = gate("broker_down_safe", snapshot(isr={0: [201], 1: ALL}, leader=-1), 102)
    assert problems[0] == "2 offline partition(s): t-0, t-1"
    assert problems[1] == "1 partition(s) under min.insync.replicas: t-0"


def test_no_quorum_leader_blocks_a_broker():
    assert gate("broker_down_safe", snapshot(quorum_leader=-1), 101) == ["the quorum has no leader"]


def test_a_restarted_broker_is_back_only_when_unfenced_in_its_dc_and_in_every_isr():
    fenced = {b: {"dc": DC[b], "fenced": b == 101} for b in ALL}
    assert gate("broker_back", snapshot(brokers=fenced), 101) == ["broker 101 is fenced"]
    gone = {b: {"dc": DC[b], "fenced": False} for b in ALL if b != 101}
    assert gate("broker_back", snapshot(brokers=gone, leader=102), 101)[0] == "broker 101 is not registered"
    moved = {b: {"dc": "DC1" if b == 101 else DC[b], "fenced": False} for b in ALL}
    assert gate("broker_back", snapshot(brokers=moved), 101) == [
        "broker 101 runs with broker.rack='DC1', the inventory says 'dc1'"
    ]
    catching_up = snapshot(isr={0: [102, 201, 202], 1: ALL})
    assert gate("broker_back", catching_up, 101) == [
        "1 partition(s) without broker 101 in the ISR: t-0",
        "1 under-replicated partition(s): t-0",
    ]


def test_a_controller_goes_down_only_when_the_other_voters_have_caught_up():
    lagging = snapshot(voters={1: 50, 2: 40, 3: 50})
    assert gate("controller_down_safe", lagging, 3) == ["voter 2 is 10 records behind the leader"]
    assert gate("controller_down_safe", lagging, 2) == [], "its own lag does not block it"
    assert gate("controller_down_safe", lagging, 3, max_lag=10) == []


def test_a_restarted_controller_is_back_when_it_is_a_caught_up_voter():
    assert gate("controller_back", snapshot(voters={1: 50, 3: 50}), 2) == ["controller 2 is not a voter"]
    assert gate("controller_back", snapshot(voters={1: 50, 2: 7, 3: 50}), 2) == [
        "voter 2 is 43 records behind the leader"
    ]


def test_many_partitions_are_counted_and_a_few_named():
    isr = {p: [101, 102, 201] for p in range(8)}
    assert gate("cluster_healthy", snapshot(isr=isr)) == [
        "8 under-replicated partition(s): t-0, t-1, t-2, t-3, t-4 and 3 more"
    ]


def test_a_cluster_that_lost_a_dc_is_neither_healthy_nor_ready():
    dc_lost = snapshot(
        isr={0: [101, 102], 1: [101, 102]},
        brokers={101: {"dc": "dc1", "fenced": False}, 102: {"dc": "dc1", "fenced": False}},
        voters={1: 50, 2: 20, 3: 50},
    )
    assert gate("broker_down_safe", dc_lost, 101) == [
        "2 partition(s) that would go under min.insync.replicas without broker 101: t-0, t-1"
    ]
    assert gate("cluster_healthy", dc_lost) == [
        "voter 2 is 30 records behind the leader",
        "broker 201 is not registered",
        "broker 202 is not registered",
        "2 under-replicated partition(s): t-0, t-1",
    ]
    assert gate("cluster_ready", dc_lost) == [
        "voter 2 is 30 records behind the leader",
        "broker 201 is not registered",
        "broker 202 is not registered",
    ]


def test_the_quorum_is_ready_only_with_the_inventorys_voters_over_three_dcs():
    assert gate("quorum_ready", snapshot(quorum_leader=-1)) == ["the quorum has no leader"]
    assert gate("quorum_ready", snapshot(), expected={"controllers": {1: "a", 2: "b", 4: "c"}}) == [
        "voters are [1, 2, 3], the inventory declares [1, 2, 4]",
        "voters span 2 DC(s) (a, b), need 3",
    ]
    assert gate("quorum_ready", snapshot(), expected={"controllers": {1: "dc1", 2: "dc2", 3: "dc2"}}) == [
        "voters span 2 DC(s) (dc1, dc2), need 3"
    ]
    assert gate("quorum_ready", snapshot(voters={1: 90, 2: 50, 3: 90}), max_lag=5) == [
        "voter 2 is 40 records behind the leader"
    ]


def test_registered_brokers_the_inventory_lacks_keep_the_cluster_from_ready():
    extra = {b: {"dc": DC.get(b, "dc1"), "fenced": False} for b in [*ALL, 301]}
    assert gate("cluster_ready", snapshot(brokers=extra)) == ["broker 301 is registered but not in the inventory"]


# -- failing closed: what cannot be read is never a pass --------------------------
@pytest.mark.parametrize("name", ["broker_down_safe", "broker_back", "cluster_healthy", "cluster_ready"])
def test_a_read_error_fails_every_gate_that_reads_it(name):
    snap = snapshot()
    snap["errors"] = ["topic t: error 3"]
    assert gate(name, snap, 101) == ["cannot read topic t: error 3"]


@pytest.mark.parametrize("part", ["partitions", "brokers", "quorum"])
def test_a_part_that_could_not_be_read_fails_the_gate(part):
    snap = snapshot()
    snap[part] = None
    assert f"the cluster's {part} could not be read" in gate("cluster_healthy", snap)


def test_an_empty_snapshot_passes_nothing():
    empty = {"partitions": [], "min_isr": {}, "brokers": {}, "quorum": {"leader": -1, "voters": {}}, "errors": []}
    assert gate("broker_down_safe", empty, 101) == [
        "1 declared topic(s) missing from the cluster's reply: t",
        "the quorum reported no voters",
    ]
    assert gate("cluster_healthy", empty)[:2] == [
        "1 declared topic(s) missing from the cluster's reply: t",
        "the quorum reported no voters",
    ]


def test_a_declared_topic_missing_from_the_reply_fails_the_gate():
    partial = snapshot()
    partial["partitions"] = []
    assert gate("cluster_healthy", partial) == ["1 declared topic(s) missing from the cluster's reply: t"]


def test_a_topic_whose_min_isr_was_not_reported_is_not_taken_as_one():
    snap = snapshot(isr={0: [101], 1: ALL})
    snap["min_isr"] = {}
    assert gate("broker_down_safe", snap, 101) == ["1 topic(s) whose min.insync.replicas could not be read: t"]


def test_a_quorum_without_voters_is_not_safe_for_a_controller_to_leave():
    snap = snapshot(voters={})
    assert gate("controller_down_safe", snap, 1) == ["the quorum reported no voters"]


def test_an_unknown_gate_or_a_node_gate_without_its_node_is_refused():
    with pytest.raises(GateError, match="unknown gate 'ready'"):
        gate("ready", snapshot())
    with pytest.raises(GateError, match="gate broker_back needs the node"):
        gate("broker_back", snapshot())


# -- the poll, on an injected clock -------------------------------------------------
class Clock:
    def __init__(self):
        self.now = 0.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def test_the_poll_waits_until_the_gate_passes():
    clock = Clock()
    reads = iter([snapshot(quorum_leader=-1), snapshot(quorum_leader=-1), snapshot()])
    outcome = poll(lambda: next(reads), "cluster_healthy", EXPECTED, timeout=60, interval=2, clock=clock,
                   sleep=clock.sleep)  # fmt: skip
    assert (outcome["passed"], outcome["polls"], outcome["waited"], clock.slept) == (True, 3, 4.0, [2, 2])


def test_the_poll_says_when_it_first_judged_a_read_and_when_the_gate_passed():
    clock = Clock()
    reads = iter([snapshot(quorum_leader=-1), snapshot()])
    outcome = poll(lambda: next(reads), "cluster_healthy", EXPECTED, timeout=60, interval=2, clock=clock,
                   sleep=clock.sleep, wall=lambda: 1_800_000_000 + clock.now)  # fmt: skip
    assert (outcome["first_judged_at"], outcome["last_judged_at"]) == (1_800_000_000, 1_800_000_002)


def test_a_read_error_is_a_failed_poll_until_the_timeout():
    clock = Clock()

    def unreachable():
        raise ConnectionError("10.0.0.1:9092 refused")

    outcome = poll(unreachable, "cluster_healthy", EXPECTED, timeout=10, interval=3, clock=clock, sleep=clock.sleep)
    assert outcome["passed"] is False
    assert outcome["problems"] == ["cannot read the cluster: 10.0.0.1:9092 refused"]
    assert outcome["waited"] >= 10
    assert outcome["polls"] == 5


def test_a_dry_run_reads_once_and_reports_without_waiting():
    clock = Clock()
    outcome = poll(lambda: snapshot(quorum_leader=-1), "cluster_healthy", EXPECTED, wait=False, clock=clock,
                   sleep=clock.sleep)  # fmt: skip
    assert (outcome["passed"], outcome["polls"], clock.slept) == (False, 1, [])
    assert outcome["problems"] == ["the quorum has no leader"]


def test_a_refused_gate_is_not_retried_as_a_read_error():
    with pytest.raises(GateError):
        poll(snapshot, "no_such_gate", EXPECTED)


# -- the operator's report ----------------------------------------------------------
RECORDS = [
    {"host": "c1", "node_id": 1, "dc": "dc1", "roles": ["controller"]},
    {"host": "c2", "node_id": 2, "dc": "dc2", "roles": ["controller"]},
    {"host": "b11", "node_id": 101, "dc": "dc1", "roles": ["broker"]},
    {"host": "b21", "node_id": 201, "dc": "dc2", "roles": ["broker"]},
]


def test_the_report_shows_every_node_with_its_dc_and_state():
    snap = snapshot(voters={1: 50, 2: 48, 3: 50}, brokers={101: {"dc": "dc1", "fenced": False}})
    lines = report(snap, RECORDS)
    assert lines[0] == "cluster abc: leader 1 (epoch 4), 3 voters, 1 brokers registered"
    assert lines[2].split() == ["1", "c1", "dc1", "controller", "leader,", "lag", "0"]
    assert lines[3].split() == ["2", "c2", "dc2", "controller", "follower,", "lag", "2"]
    assert lines[4].split() == ["101", "b11", "dc1", "broker", "unfenced,", "rack", "dc1"]
    assert lines[5].split() == ["201", "b21", "dc2", "broker", "not", "registered"]


def test_the_report_says_unknown_for_what_could_not_be_read():
    snap = snapshot()
    snap["brokers"] = None
    assert report(snap, RECORDS)[0].endswith("brokers unknown")
    assert report(snap, RECORDS)[4].split()[-1] == "unknown"
    snap["quorum"] = None  # not "not a voter": nobody could say
    assert report(snap, RECORDS)[0] == "cluster abc: quorum unknown, brokers unknown"
    assert report(snap, RECORDS)[2].split()[-2:] == ["quorum", "unknown"]


CONTROLLERS = [
    {"host": "c1", "node_id": 1, "dc": "dc1"},
    {"host": "c2", "node_id": 2, "dc": "dc2"},
    {"host": "c3", "node_id": 3, "dc": "dc3"},
]
BROKERS = [
    {"host": "b11", "node_id": 101, "dc": "dc1"},
    {"host": "b12", "node_id": 102, "dc": "dc1"},
    {"host": "b21", "node_id": 201, "dc": "dc2"},
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


def test_a_voter_whose_node_came_back_with_new_storage_is_named_with_the_way_out():
    wiped = snapshot(voters={1: 50, 2: 50, 3: 10})
    wiped["quorum"]["replicas"] = {
        "voters": [{"id": v, "directory_id": f"dir{v}", "log_end_offset": e} for v, e in ((1, 50), (2, 50), (3, 10))],
        "observers": [{"id": 3, "directory_id": "fresh", "log_end_offset": 50}],
    }
    assert gate("quorum_ready", wiped) == [
        "voter 3 is 40 records behind the leader: controller 3 runs with new storage (directory fresh) as an "
        "observer, its disk wiped or its host rebuilt; give the voter its new key with "
        "playbooks/controllers.yml -e kafka_ops_quorum_action=replace"
    ]
    wiped["quorum"]["replicas"]["observers"] = []
    assert gate("quorum_ready", wiped) == ["voter 3 is 40 records behind the leader"]


QUORUM_GATES = (("quorum_ready", None), ("cluster_ready", None), ("cluster_healthy", None),
                ("controller_down_safe", 2), ("controller_back", 1))  # fmt: skip


@pytest.mark.parametrize(("name", "node"), QUORUM_GATES)
def test_a_quorum_leader_that_is_not_among_its_voters_fails_closed(name, node):
    # The leader's log end is what every voter's lag is measured against: a
    # leader the voters do not include leaves nothing to measure, not a pass.
    problems = gate(name, snapshot(quorum_leader=7), node)
    assert "the quorum's leader 7 is not among its voters [1, 2, 3]" in problems


PARTITION_GATES = (("broker_down_safe", 101), ("broker_back", 101), ("broker_drained", 102), ("cluster_healthy", None))


@pytest.mark.parametrize(("name", "node"), PARTITION_GATES)
def test_a_partition_leader_the_gate_cannot_place_fails_closed(name, node):
    problems = gate(name, snapshot(leader=999), node)
    assert "2 partition(s) led by a node that is not one of their replicas: t-0 (999), t-1 (999)" in problems


def test_a_partition_leader_that_is_not_a_registered_broker_fails_closed():
    # 202 still holds a replica in the reply, but the cluster no longer registers it.
    registered = {b: {"dc": DC[b], "fenced": False} for b in ALL if b != 202}
    problems = gate("broker_down_safe", snapshot(leader=202, brokers=registered), 101)
    assert "2 partition(s) led by a broker the cluster does not register: t-0 (202), t-1 (202)" in problems


def test_a_stopped_broker_is_waited_for_until_fenced_and_its_registration_comes_from_the_reply():
    fenced = {b: {"dc": DC[b], "fenced": b == 102} for b in ALL}
    assert gate("broker_stopped", snapshot(brokers=fenced), 102) == []
    gone = {b: {"dc": DC[b], "fenced": False} for b in ALL if b != 102}
    assert gate("broker_stopped", snapshot(brokers=gone), 102) == []
    assert gate("broker_stopped", snapshot(), 102) == [
        "broker 102 is registered and unfenced: it still runs, or the cluster has not fenced it yet"
    ]
    unread = {**snapshot(), "brokers": None, "errors": ["the registered brokers: KafkaTimeoutError"]}
    assert gate("broker_stopped", unread, 102) == [
        "cannot read the registered brokers: KafkaTimeoutError",
        "the cluster's brokers could not be read",
    ]
    assert registered(snapshot(brokers=fenced)) == ALL
    assert registered(unread) is None


# -- a DC taken down: gone in Kafka's own view -------------------------------------
NOW = 1_700_000_000_000  # the quorum leader's clock, ms


def dc2_lost(fenced=(201, 202), silent_ms=20_000, quorum_leader=1, fetched=None):
    """dc2's brokers fenced (or those given), its controller 2 and brokers silent for silent_ms."""
    snap = snapshot(quorum_leader=quorum_leader)
    for broker in fenced:
        snap["brokers"][broker]["fenced"] = True
    snap["quorum"]["fetched"] = (
        fetched
        if fetched is not None
        else {
            1: NOW,
            3: NOW - 300,
            2: NOW - silent_ms,
            101: NOW - 200,
            102: NOW - 100,
            201: NOW - silent_ms - 500,
            202: NOW - silent_ms,
        }  # fmt: skip
    )
    snap["read_at"] = 5000.0
    return snap


def test_a_dc_whose_brokers_are_fenced_and_controller_silent_is_gone():
    assert gate("dc_lost", dc2_lost(), "dc2") == []


def test_a_dc_that_answers_in_kafkas_view_is_not_gone_and_what_answers_is_named():
    up = dc2_lost(fenced=(), fetched={1: NOW, 2: NOW - 150, 3: NOW - 300, 101: NOW, 102: NOW, 201: NOW - 80, 202: NOW})
    assert gate("dc_lost", up, "dc2") == [
        "dc2 answers in Kafka's view: broker 201 is registered and unfenced, last heard 0.1 s ago; broker 202 is "
        "registered and unfenced, last heard 0.0 s ago; controller 2 fetched from the quorum's leader 0.1 s ago"
    ]


def test_a_dc_whose_controller_leads_the_quorum_is_not_gone():
    assert gate("dc_lost", dc2_lost(quorum_leader=2), "dc2") == [
        "dc2 answers in Kafka's view: controller 2 leads the quorum"
    ]


def test_one_unfenced_broker_is_enough_to_refuse():
    assert gate("dc_lost", dc2_lost(fenced=(201,)), "dc2") == [
        "dc2 answers in Kafka's view: broker 202 is registered and unfenced, last heard 20.0 s ago"
    ]


def test_a_reply_without_fetch_times_cannot_say_a_dc_is_gone():
    assert gate("dc_lost", dc2_lost(fetched={}), "dc2") == [
        "the quorum's reply carries no fetch times, so it cannot tell which nodes are gone "
        "(DescribeQuorum v1, Kafka 3.3 or later, gives them)"
    ]


def test_an_unread_quorum_or_broker_list_fails_the_dc_gate_closed():
    unread = dc2_lost()
    unread["brokers"] = None
    assert gate("dc_lost", unread, "dc2") == ["the cluster's brokers could not be read"]


@pytest.mark.parametrize("dc", [None, "dc9"])
def test_the_dc_gate_needs_a_dc_of_the_inventory(dc):
    with pytest.raises(GateError, match="needs a DC of the inventory"):
        gate("dc_lost", dc2_lost(), dc)


def test_the_dc_went_silent_when_its_first_broker_stopped_fetching_on_the_leaders_clock():
    # 201's last fetch is the first, as the leader gives it (epoch ms on its clock): not re-based on this machine's
    # clock, whose read began at 5000.0 here, nor on the freshest fetch of another node.
    assert lost_since(dc2_lost(), EXPECTED, "dc2") == (NOW - 20_500) / 1000
    assert lost_by(dc2_lost(), EXPECTED, "dc2") == (NOW - 20_500) / 1000
    # The tiebreaker DC has no brokers: its controller's last fetch dates it.
    assert lost_since(dc2_lost(), EXPECTED, "dc3") == (NOW - 300) / 1000
    assert lost_since(dc2_lost(fetched={}), EXPECTED, "dc2") is None


def test_a_dc_whose_brokers_the_leader_no_longer_lists_has_no_exact_start_only_a_bound():
    # The leader dropped broker 201 (300 s after its last fetch) but still lists 202: 201 may have stopped first,
    # so the start is not known, only that the DC was down by 202's last fetch.
    late = dc2_lost(fetched={1: NOW, 2: NOW - 20_000, 3: NOW - 300, 101: NOW, 102: NOW, 202: NOW - 20_000})
    assert lost_since(late, EXPECTED, "dc2") is None
    assert lost_by(late, EXPECTED, "dc2") == (NOW - 20_000) / 1000
    # A leader elected after the loss never had their fetches (-1): neither.
    new_leader = dc2_lost(fetched={1: NOW, 2: -1, 3: NOW - 300, 101: NOW, 102: NOW, 201: -1, 202: -1})
    assert lost_since(new_leader, EXPECTED, "dc2") is None
    assert lost_by(new_leader, EXPECTED, "dc2") is None


# -- eligible leader replicas in the status report ---------------------------------
def test_the_report_says_whether_elr_is_on_and_which_partitions_hold_eligible_leaders():
    partitions = [
        {"topic": "t", "partition": 0, "isr": [101, 102], "elr": [201, 202], "last_known_elr": []},
        {"topic": "t", "partition": 1, "isr": [101, 102, 201, 202], "elr": [], "last_known_elr": []},
        {"topic": "t", "partition": 2, "isr": [], "elr": [], "last_known_elr": [201]},
    ]
    lines = elr_report({"eligible.leader.replicas.version": 1, "metadata.version": 27}, partitions)
    assert lines[0].startswith("eligible leader replicas (KIP-966): eligible.leader.replicas.version 1, on:")
    assert lines[1] == "  1 partition(s) with eligible leader replicas: t-0 [201, 202]"
    assert lines[2] == "  1 partition(s) with a last-known ELR: t-2 [201]"


def test_the_report_says_elr_is_off_without_the_feature_and_unknown_when_unread():
    off = elr_report({"metadata.version": 27}, [])
    assert off[0].startswith("eligible leader replicas (KIP-966): eligible.leader.replicas.version 0, off:")
    assert off[1] == "  no partition holds eligible leader replicas"
    assert elr_report(None, None) == ["eligible leader replicas (KIP-966): could not be read"]


# -- every topic writable by its metadata, after a failover's relaxation ---------------------------------------------
def test_topics_are_writable_when_every_partition_has_a_live_leader_and_its_isr_at_min_isr():
    lost = dc2_lost()
    lost["partitions"] = [{"topic": "t", "partition": p, "leader": 101, "replicas": ALL, "isr": [101, 102]}
                          for p in (0, 1)]  # fmt: skip
    assert gate("topics_writable", lost) == []
    # A topic's own min ISR 3 not relaxed yet: under it. Kafka caps it at the replicas: 3 at RF 2 holds at 2.
    lost["min_isr"] = {"t": 3}
    assert gate("topics_writable", lost) == [
        "2 partition(s) whose ISR is under their min.insync.replicas: t-0 (ISR 2 of 3), t-1 (ISR 2 of 3)"
    ]
    lost["partitions"] = [{"topic": "t", "partition": 0, "leader": 101, "replicas": [101, 102], "isr": [101, 102]}]
    assert gate("topics_writable", lost) == []


def test_a_partition_still_led_by_a_fenced_broker_or_offline_is_not_writable():
    lost = dc2_lost()
    lost["partitions"] = [{"topic": "t", "partition": 0, "leader": 201, "replicas": ALL, "isr": ALL},
                          {"topic": "t", "partition": 1, "leader": -1, "replicas": ALL, "isr": []}]  # fmt: skip
    assert gate("topics_writable", lost) == [
        "1 offline partition(s): t-1",
        "1 partition(s) led by a fenced broker: t-0 (201)",
        "1 partition(s) whose ISR is under their min.insync.replicas: t-1 (ISR 0 of 2)",
    ]
    unread = dc2_lost()
    unread["partitions"] = [{"topic": "t", "partition": 0, "leader": 101, "replicas": ALL, "isr": ALL}]
    unread["min_isr"] = {}
    assert gate("topics_writable", unread) == ["1 topic(s) whose min.insync.replicas could not be read: t"]


def test_a_converges_restarts_expect_only_the_declared_topics_the_cluster_already_has():
    found = [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}, {"topic": "__consumer_offsets"}]
    assert topics_present(["payments", "orders"], found, []) == ["orders"], "a topic created later was expected"
    assert topics_present(["orders"], [], []) == []
    assert topics_present([], found, []) == []


def test_which_declared_topics_exist_is_not_guessed_from_a_read_with_errors():
    with pytest.raises(GateError, match="cannot read which declared topics the cluster has: orders: error 3"):
        topics_present(["orders"], [], ["orders: error 3"])
