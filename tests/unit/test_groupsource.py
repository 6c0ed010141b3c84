"""The active/active source's logic: planning, offsets, revocation and commits (groupplan), the group
member's callbacks and commits on a stub consumer (groupmember), the executors' range reads on a stub
consumer, the job's start checks, and the sink's verdicts (groupsink)."""

import json
import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from stretch.smoke import active_job, groupmember, groupsink
from stretch.smoke.checks import SmokeError
from stretch.smoke.groupplan import Assignment, PlanError, Planner, key, ordered, split_key

# -- groupplan ---------------------------------------------------------------------------------


def planner(max_records=0):
    assignment = Assignment()
    return assignment, Planner(assignment, max_records)


def latest(assignment, plan, high):
    return plan.latest(assignment.owned(), high)


def test_keys_round_trip_and_refuse_what_is_not_a_partition():
    assert split_key(key("orders.v1", 3)) == ("orders.v1", 3)
    with pytest.raises(PlanError, match="not a topic:partition"):
        split_key("orders")
    assert list(ordered({"b:1": 0, "a:10": 0, "a:2": 0})) == ["a:2", "a:10", "b:1"]


def test_an_arriving_partition_starts_at_the_groups_committed_offset():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100, "load:1": 7})
    end = latest(assignment, plan, {"load:0": 150, "load:1": 7})
    assert plan.ranges({}, end) == [("load", 0, 100, 150)]
    assert end["load:0"]["from"] == 100
    assert end["load:0"]["to"] == 150


def test_a_partition_that_stays_goes_on_from_the_previous_batch_end():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100})
    first = latest(assignment, plan, {"load:0": 150})
    second = latest(assignment, plan, {"load:0": 180})
    assert plan.ranges(first, second) == [("load", 0, 150, 180)]
    assert second["load:0"]["era"] == first["load:0"]["era"]


def test_nothing_new_gives_the_same_offset_so_spark_plans_no_batch():
    assignment, plan = planner()
    assignment.assigned({"load:0": 100, "load:1": 5})
    first = latest(assignment, plan, {"load:0": 150, "load:1": 5})
    again = latest(assignment, plan, {"load:0": 150, "load:1": 5})
    assert json.dumps(again) == json.dumps(first)


def test_a_partition_without_new_records_reads_nothing_in_a_batch_of_others():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0})
    first = latest(assignment, plan, {"load:0": 10, "load:1": 10})
    second = latest(assignment, plan, {"load:0": 20, "load:1": 10})
    assert plan.ranges(first, second) == [("load", 0, 10, 20)]


def test_a_revoked_partition_is_no_longer_planned():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0})
    first = latest(assignment, plan, {"load:0": 10, "load:1": 10})
    assignment.revoked(["load:1"])
    second = latest(assignment, plan, {"load:0": 20})
    assert list(second) == ["load:0"]
    assert plan.ranges(first, second) == [("load", 0, 10, 20)]


def test_a_partition_that_comes_back_starts_at_the_group_not_at_the_checkpoint():
    """Revoked, then assigned again: another DC's job may have read on, so the group's offset wins."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    first = latest(assignment, plan, {"load:0": 10})
    assignment.revoked(["load:0"])
    assignment.assigned({"load:0": 40})  # the other DC's job committed 40 meanwhile
    second = latest(assignment, plan, {"load:0": 50})
    assert second["load:0"]["era"] != first["load:0"]["era"]
    assert plan.ranges(first, second) == [("load", 0, 40, 50)]


def test_a_batch_run_again_after_a_restart_reads_what_it_read_the_first_time():
    """The ranges follow from the two offsets alone: a new process, with other eras, plans them the same."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    start = latest(assignment, plan, {"load:0": 10})
    assignment.assigned({"load:1": 3})
    end = latest(assignment, plan, {"load:0": 25, "load:1": 9})
    fresh_assignment, fresh = planner()
    fresh_assignment.assigned({"load:0": 0, "load:1": 0})
    assert fresh.ranges(start, end) == plan.ranges(start, end) == [("load", 0, 10, 25), ("load", 1, 3, 9)]


def test_after_a_restart_every_partition_starts_at_the_group():
    """A new process owns its partitions in new eras: the checkpoint's end does not carry over."""
    assignment, plan = planner()
    assignment.assigned({"load:0": 0})
    checkpoint = latest(assignment, plan, {"load:0": 30})
    restarted_assignment, restarted = planner()
    restarted_assignment.assigned({"load:0": 20})  # the group trails the checkpoint by the last batch
    end = latest(restarted_assignment, restarted, {"load:0": 30})
    assert restarted.ranges(checkpoint, end) == [("load", 0, 20, 30)]


def test_the_cap_bounds_each_batch_and_the_rest_follows():
    assignment, plan = planner(max_records=100)
    assignment.assigned({"load:0": 0})
    first = latest(assignment, plan, {"load:0": 250})
    second = latest(assignment, plan, {"load:0": 250})
    third = latest(assignment, plan, {"load:0": 250})
    assert plan.ranges({}, first) == [("load", 0, 0, 100)]
    assert plan.ranges(first, second) == [("load", 0, 100, 200)]
    assert plan.ranges(second, third) == [("load", 0, 200, 250)]


def test_an_unreadable_end_offset_holds_the_partition_back():
    assignment, plan = planner()
    assignment.assigned({"load:0": 5, "load:1": 5})
    end = latest(assignment, plan, {"load:0": 9})
    assert end["load:1"]["to"] == 5
    assert plan.ranges({}, end) == [("load", 0, 5, 9)]


def test_a_range_that_would_go_backwards_is_refused():
    _, plan = planner()
    start = {"load:0": {"era": "a", "from": 0, "to": 50}}
    end = {"load:0": {"era": "a", "from": 0, "to": 40}}
    with pytest.raises(PlanError, match="before it begins"):
        plan.ranges(start, end)


def test_a_finished_batch_commits_only_what_is_still_owned_in_the_same_era():
    assignment, plan = planner()
    assignment.assigned({"load:0": 0, "load:1": 0, "load:2": 0})
    end = latest(assignment, plan, {"load:0": 10, "load:1": 10, "load:2": 10})
    assignment.revoked(["load:1"])
    assignment.revoked(["load:2"])
    assignment.assigned({"load:2": 4})
    commit, skipped = plan.to_commit(end)
    assert commit == {"load:0": 10}
    assert skipped == ["load:1", "load:2"]


def test_a_start_that_is_no_offset_is_refused():
    with pytest.raises(PlanError, match="not an offset"):
        Assignment().assigned({"load:0": -1001})


# -- groupmember: the driver's member on a stub consumer --------------------------------------


class StubConsumer:
    def __init__(self, committed=None, watermarks=(0, 0), commit_errors=()):
        self.committed_offsets = committed or {}
        self.watermarks = watermarks
        self.commit_errors = list(commit_errors)
        self.assigned, self.paused, self.commits = [], [], []
        self.closed = False

    def incremental_assign(self, partitions):
        self.assigned += partitions

    def pause(self, partitions):
        self.paused += partitions

    def committed(self, partitions, timeout):
        return [
            TopicPartition(tp.topic, tp.partition, self.committed_offsets.get(tp.partition, -1001)) for tp in partitions
        ]

    def get_watermark_offsets(self, tp, timeout):
        return self.watermarks

    def commit(self, offsets, asynchronous):
        assert asynchronous is False
        if self.commit_errors:
            raise KafkaException(self.commit_errors.pop(0))
        self.commits.append({(tp.topic, tp.partition): tp.offset for tp in offsets})

    def close(self):
        self.closed = True


class Result:
    def __init__(self, offset=None, error=None):
        self.offset_value, self.error = offset, error

    def result(self):
        if self.error:
            raise KafkaException(self.error)
        return type("Info", (), {"offset": self.offset_value})()


class StubAdmin:
    def __init__(self, ends):
        self.ends = ends  # {partition: end offset, or a KafkaError}

    def list_offsets(self, wanted, request_timeout):
        out = {}
        for tp in wanted:
            end = self.ends[tp.partition]
            out[tp] = Result(error=end) if isinstance(end, KafkaError) else Result(end)
        return out


def settings(**kw):
    return groupmember.Settings(bootstrap_servers="b:9092", topics=("load",), group="g", rack="dc1", **kw)


def member(consumer, admin=None, clock=None, tmp_path=None, **kw):
    events = groupmember.Events(tmp_path / "events.jsonl" if tmp_path else "", "dc1")
    return groupmember.GroupMember(
        settings(**kw), consumer, admin or StubAdmin({}), events, clock=clock or (lambda: 0.0), retries=2
    )


def test_an_assignment_is_paused_at_once_and_starts_at_the_committed_offsets(tmp_path):
    consumer = StubConsumer(committed={0: 42}, watermarks=(3, 90))
    m = member(consumer, tmp_path=tmp_path)
    parts = [TopicPartition("load", 0), TopicPartition("load", 1)]
    m._on_assign(consumer, parts)
    assert consumer.assigned == parts
    assert consumer.paused == parts
    owned = m.assignment.owned()
    assert owned["load:0"].start == 42  # the group's
    assert owned["load:1"].start == 3  # none committed: earliest
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "assigned"
    assert events[-1]["partitions"] == {"load:0": 42, "load:1": 3}


def test_latest_starts_a_partition_with_no_committed_offset_at_the_end_when_told(tmp_path):
    consumer = StubConsumer(watermarks=(3, 90))
    m = member(consumer, starting_offsets="latest")
    m._on_assign(consumer, [TopicPartition("load", 1)])
    assert m.assignment.owned()["load:1"].start == 90


def test_revoked_and_lost_partitions_leave_the_plan():
    consumer = StubConsumer(committed={0: 0, 1: 0})
    m = member(consumer, StubAdmin({0: 10, 1: 10}))
    m._on_assign(consumer, [TopicPartition("load", 0), TopicPartition("load", 1)])
    m._on_revoke(consumer, [TopicPartition("load", 0)])
    assert list(m.latest()) == ["load:1"]
    m._on_lost(consumer, [TopicPartition("load", 1)])
    assert m.latest() == {}


def test_commit_sends_only_the_partitions_still_owned_synchronously(tmp_path):
    consumer = StubConsumer(committed={0: 0, 1: 0})
    m = member(consumer, StubAdmin({0: 10, 1: 12}), tmp_path=tmp_path)
    m._on_assign(consumer, [TopicPartition("load", 0), TopicPartition("load", 1)])
    end = m.latest()
    m._on_revoke(consumer, [TopicPartition("load", 1)])
    assert m.commit(end) == {"load:0": 10}
    assert consumer.commits == [{("load", 0): 10}]
    kinds = [json.loads(line)["event"] for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert "commit-skipped" in kinds
    assert "committed" in kinds


def test_a_retriable_commit_error_is_retried_and_a_fencing_one_is_not():
    retriable = KafkaError(KafkaError.REQUEST_TIMED_OUT, "timed out", retriable=True)
    consumer = StubConsumer(committed={0: 0}, commit_errors=[retriable])
    m = member(consumer, StubAdmin({0: 10}))
    m._on_assign(consumer, [TopicPartition("load", 0)])
    assert m.commit(m.latest()) == {"load:0": 10}
    fenced = KafkaError(KafkaError.STALE_MEMBER_EPOCH, "stale", retriable=False)
    consumer.commit_errors = [fenced, fenced]
    end = m.latest()
    assert m.commit(end) == {}
    assert len(consumer.commits) == 1


def test_a_fatal_error_fails_spark_at_its_next_call():
    m = member(StubConsumer())
    m._fail("the group member got GROUP_AUTHORIZATION_FAILED: not authorized")
    with pytest.raises(groupmember.SourceError, match="GROUP_AUTHORIZATION_FAILED"):
        m.latest()


def test_an_end_offset_unreadable_too_long_fails_the_query():
    now = [0.0]
    down = KafkaError(KafkaError.LEADER_NOT_AVAILABLE, "no leader")
    consumer = StubConsumer(committed={0: 5})
    m = member(consumer, StubAdmin({0: down}), clock=lambda: now[0], offsets_timeout=30)
    m._on_assign(consumer, [TopicPartition("load", 0)])
    assert m.latest()["load:0"]["to"] == 5  # held back, not failed
    now[0] = 31.0
    with pytest.raises(groupmember.SourceError, match="could not be read for 30 s"):
        m.latest()


def test_close_leaves_the_group():
    consumer = StubConsumer()
    m = member(consumer)
    m.close()
    assert consumer.closed


def test_the_reader_is_built_from_the_options_and_refuses_missing_ones():
    s = groupmember.Settings.from_options(
        {
            "bootstrap.servers": "b:1",
            "topics": "a, b",
            "group.id": "g",
            "client.rack": "dc2",
            "kafka.fetch.wait.max.ms": "50",
        }
    )
    assert s.topics == ("a", "b")
    assert s.rack == "dc2"
    assert s.reader_config()["client.rack"] == "dc2"
    assert s.reader_config()["fetch.wait.max.ms"] == "50"
    assert s.member_config()["group.protocol"] == "consumer"
    with pytest.raises(groupmember.SourceError, match="group.id, client.rack"):
        groupmember.Settings.from_options({"bootstrap.servers": "b:1", "topics": "a"})
    with pytest.raises(groupmember.SourceError, match="starting.offsets 'newest'"):
        groupmember.Settings.from_options(
            {"bootstrap.servers": "b", "topics": "a", "group.id": "g", "client.rack": "d", "starting.offsets": "newest"}
        )


# -- groupmember: the executors' range read on a stub consumer --------------------------------


class Msg:
    def __init__(self, offset, partition=0, error=None):
        self._offset, self._partition, self._error = offset, partition, error

    def error(self):
        return self._error

    def topic(self):
        return "load"

    def partition(self):
        return self._partition

    def offset(self):
        return self._offset

    def timestamp(self):
        return (1, 1000 + self._offset)

    def key(self):
        return None

    def value(self):
        return b"v%d" % self._offset


class ReadConsumer:
    def __init__(self, batches, position=None):
        self.batches, self.position_at, self.assigned, self.closed = list(batches), position, None, False
        self.first_assigned = None

    def assign(self, partitions):
        self.assigned = partitions
        self.first_assigned = self.first_assigned or partitions

    def unassign(self):
        self.assigned = None

    def consume(self, num_messages, timeout):
        assert self.assigned, "consumed from a reader with no partition assigned"
        return self.batches.pop(0) if self.batches else []

    def position(self, partitions):
        return [TopicPartition("load", 0, self.position_at if self.position_at is not None else -1001)]

    def poll(self, timeout):
        return None

    def close(self):
        self.closed = True


@pytest.fixture(autouse=True)
def _fresh_readers():
    groupmember._READERS.clear()
    yield
    groupmember._READERS.clear()


def read(consumer, start, end, clock=None, **kw):
    return groupmember.read_range(
        settings(**kw), "load", 0, start, end, lambda config: consumer, **({"clock": clock} if clock else {})
    )


def test_a_range_is_read_exactly_and_from_its_start():
    consumer = ReadConsumer([[Msg(9), Msg(10), Msg(11)], [Msg(12), Msg(13), Msg(14)]])
    rows = read(consumer, 10, 13)
    assert [r[2] for r in rows] == [10, 11, 12]
    assert consumer.first_assigned[0].offset == 10
    assert rows[0] == ("load", 0, 10, 1010, None, b"v10", None)


def test_once_its_range_is_read_the_reader_lets_go_of_the_partition_so_nothing_is_fetched_ahead():
    consumer = ReadConsumer([[Msg(10), Msg(11)], [Msg(12), Msg(13)]])
    read(consumer, 10, 12)
    assert consumer.assigned is None
    assert [r[2] for r in read(consumer, 12, 14)] == [12, 13], "the next range of the partition was not read"


def test_offsets_without_records_inside_the_range_are_skipped():
    consumer = ReadConsumer([[Msg(10), Msg(13)], [Msg(14)]])
    assert [r[2] for r in read(consumer, 10, 15)] == [10, 13, 14]


def test_a_range_ending_in_a_marker_ends_by_the_position():
    consumer = ReadConsumer([[Msg(10)], []], position=12)
    assert [r[2] for r in read(consumer, 10, 12)] == [10]


def test_an_error_fails_the_task_and_drops_the_consumer():
    gone = KafkaError(KafkaError._AUTO_OFFSET_RESET, "offset out of range")
    consumer = ReadConsumer([[Msg(0, error=gone)]])
    with pytest.raises(groupmember.SourceError, match="reading \\[10, 20\\) failed: offset out of range"):
        read(consumer, 10, 20)
    assert consumer.closed
    assert not groupmember._READERS


def test_a_read_that_does_not_finish_in_time_fails():
    now = iter([0.0, 0.0, 5.0, 200.0])
    consumer = ReadConsumer([[Msg(10)], [], []])
    with pytest.raises(groupmember.SourceError, match="read to 11 of \\[10, 20\\)"):
        read(consumer, 10, 20, clock=lambda: next(now))


# -- active_job: the checks made before Spark starts -----------------------------------------


def test_missing_credentials_are_named(tmp_path):
    config = tmp_path / "c.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=job\n")
    with pytest.raises(SmokeError, match="no sasl.password: the job's Kafka credentials are missing"):
        active_job.check_client_config(config)
    with pytest.raises(SmokeError, match="cannot read the client settings"):
        active_job.check_client_config(tmp_path / "absent")


class Node:
    def __init__(self, rack):
        self.rack = rack


class MetaTopic:
    def __init__(self, error=None):
        self.error = error


class ClusterAdmin:
    def __init__(self, topics, racks):
        self.topics, self.racks = topics, racks

    def list_topics(self, timeout):
        return type("Metadata", (), {"topics": self.topics})()

    def describe_cluster(self, request_timeout):
        nodes = [Node(r) for r in self.racks]

        class Done:
            def result(self, timeout):
                return type("Cluster", (), {"nodes": nodes})()

        return Done()


def test_an_unknown_topic_and_a_dc_that_is_no_rack_are_named():
    admin = ClusterAdmin({"load": MetaTopic()}, ["dc1", "dc2", "dc1"])
    active_job.check_cluster(admin, ["load"], "dc2")
    with pytest.raises(SmokeError, match="topic 'orders' does not exist"):
        active_job.check_cluster(admin, ["load", "orders"], "dc1")
    with pytest.raises(SmokeError, match="DC 'fra1' is no broker's rack \\(the brokers' racks are: dc1, dc2\\)"):
        active_job.check_cluster(admin, ["load"], "fra1")


def test_a_session_timeout_not_above_the_heartbeat_is_refused():
    assert active_job.group_settings(8000, 1000)["consumer.session.timeout.ms"] == "8000"
    with pytest.raises(SmokeError, match="must be longer than the heartbeat interval"):
        active_job.group_settings(1000, 1000)


# -- groupsink: the drill's verdicts ----------------------------------------------------------


def row(p, o, seq=None, run="r1", size=10, broker=101):
    return ["load", p, o, run if seq is not None else None, seq, size, broker]


def test_batches_are_written_whole_and_logged_with_their_ranges(tmp_path):
    groupsink.write_batch(tmp_path, 3, [row(0, 5, 0), row(0, 6, 1), row(1, 2, 0, broker=None)], "dc1", clock=lambda: 9)
    entry = json.loads((tmp_path / "batches.jsonl").read_text())
    assert entry["ranges"] == {"load:0": [5, 6], "load:1": [2, 2]}
    assert entry["bytes_by_broker"] == {"101": 20, "None": 10}
    files = groupsink.parse_batch_files({"batch-000000003.jsonl": (tmp_path / "batch-000000003.jsonl").read_text()})
    assert files[3][0] == tuple(row(0, 5, 0))


def test_missing_and_duplicates_are_counted_apart_over_both_dcs():
    rows = {"dc1": [row(0, 0, 0), row(0, 1, 1)], "dc2": [row(0, 1, 1), row(1, 0, 0)]}
    verdict = groupsink.judge(rows, {(0, 0), (0, 1), (1, 0), (1, 1)}, "r1")
    assert verdict["missing"] == 1
    assert verdict["missing_sample"] == [(1, 1)]
    assert verdict["duplicates"] == 1
    assert verdict["duplicates_by_partition"] == {"load:0": 1}
    assert verdict["distinct"] == 3


def test_takeover_is_the_first_batch_holding_a_partition_of_the_stopped_job():
    batches = [
        {"at": 99.0, "ranges": {"load:1": [0, 1]}},
        {"at": 103.0, "ranges": {"load:0": [0, 1]}},
        {"at": 108.5, "ranges": {"load:4": [0, 1], "load:5": [0, 1]}},
        {"at": 111.0, "ranges": {"load:6": [0, 1]}},
    ]
    found = groupsink.takeover(batches, {"load:4", "load:5", "load:6"}, killed_at=100.0)
    assert found["first_seconds"] == 8.5
    assert found["all_seconds"] == 11.0
    assert not found["not_taken"]
    assert groupsink.takeover(batches, {"load:7"}, 100.0)["first_seconds"] is None


def test_calm_means_no_assignment_change_in_the_window():
    events = [
        {"at": 1, "event": "assigned", "owned": ["load:0"], "partitions": {"load:0": 0}},
        {"at": 5, "event": "committed"},
        {"at": 9, "event": "revoked", "owned": [], "partitions": ["load:0"]},
    ]
    assert groupsink.changes_between(events, 2, 8) == []
    assert len(groupsink.changes_between(events, 2, 10)) == 1
    timeline = groupsink.owned_over_time(events)
    assert groupsink.owned_at(timeline, 4) == {"load:0"}
    assert groupsink.owned_at(timeline, 10) == frozenset()


def test_locality_counts_bytes_by_the_broker_that_served_them():
    racks = {101: "dc1", 201: "dc2"}
    rows = [row(0, 0, size=90, broker=101), row(0, 1, size=5, broker=201), row(0, 2, size=5, broker=None)]
    assert groupsink.locality(rows, racks, "dc1") == 0.9
    assert groupsink.bytes_by_dc(rows, racks) == {"dc1": 90, "dc2": 5, "unknown": 5}
    assert groupsink.locality([], racks, "dc1") is None


def test_duplicates_are_bounded_by_one_batch_per_handover():
    events = {
        "dc1": [{"event": "assigned", "partitions": {"load:0": 0}}, {"event": "assigned", "partitions": {"load:0": 9}}],
        "dc2": [{"event": "assigned", "partitions": {"load:0": 5}}],
    }
    moves = groupsink.handovers(events)
    assert moves == {"load:0": 2}
    batches = {"dc1": [{"ranges": {"load:0": [0, 4]}}], "dc2": [{"ranges": {"load:0": [5, 7]}}]}
    assert groupsink.duplicate_bound({"load:0": 10}, moves, batches)["load:0"]["within"]
    assert not groupsink.duplicate_bound({"load:0": 11}, moves, batches)["load:0"]["within"]
    assert not groupsink.duplicate_bound({"load:1": 1}, moves, batches)["load:1"]["within"]


def test_a_load_record_head_gives_its_run_and_sequence():
    assert groupsink.parse_head("LOAD:abc:3:17:....") == ("abc", 17)
    assert groupsink.parse_head("something else") == (None, None)
    assert groupsink.parse_head(None) == (None, None)


def test_a_commit_runs_on_the_poll_thread_while_it_polls():
    """librdkafka hands a synchronous commit's result to the queue the poll serves: committing on another
    thread while the poll runs never returns, so the member's poll thread makes the commit."""

    class PollingConsumer(StubConsumer):
        def subscribe(self, topics, **callbacks):
            self.callbacks = callbacks

        def poll(self, timeout):
            time.sleep(0.01)

        def commit(self, offsets, asynchronous):
            assert threading.current_thread().name == "group-member-poll"
            super().commit(offsets, asynchronous)

    consumer = PollingConsumer(committed={0: 0})
    m = member(consumer, StubAdmin({0: 10}))
    m._on_assign(consumer, [TopicPartition("load", 0)])
    m.start()
    try:
        assert m.commit(m.latest()) == {"load:0": 10}
        assert consumer.commits == [{("load", 0): 10}]
    finally:
        m.close()
