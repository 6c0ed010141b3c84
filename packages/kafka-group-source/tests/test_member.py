"""The group member on a fake consumer: its callbacks, commits, failures and the executors' range reads."""

import json
import threading
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kafka_group_source import member as groupmember
from kafka_group_source.options import SettingError, Settings, SourceError


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

    def offsets_for_times(self, partitions, timeout):
        # The first offset at or after the time: 100 records a second from 0 ms, none after 10 s (the end).
        return [
            TopicPartition(tp.topic, tp.partition, tp.offset // 10 if tp.offset < 10_000 else -1) for tp in partitions
        ]

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
    def __init__(self, ends, stale=()):
        self.ends = ends  # {partition: end offset, or a KafkaError}
        self.stale = set(stale)  # partitions refused FENCED_LEADER_EPOCH until the topic's metadata is asked for
        self.refreshed = []

    def list_offsets(self, wanted, request_timeout):
        out = {}
        for tp in wanted:
            end = self.ends[tp.partition]
            if tp.partition in self.stale:
                end = KafkaError(KafkaError.FENCED_LEADER_EPOCH, "Leader epoch is older than broker epoch")
            out[tp] = Result(error=end) if isinstance(end, KafkaError) else Result(end)
        return out

    def list_topics(self, topic, timeout):
        self.refreshed.append(topic)
        self.stale.clear()


def settings(**kw):
    return Settings(bootstrap_servers="b:9092", topics=("load",), group="g", rack="dc1", **kw)


def member(consumer, admin=None, clock=None, tmp_path=None, **kw):
    events = groupmember.Events(tmp_path / "events.jsonl" if tmp_path else "", "dc1")
    return groupmember.GroupMember(
        settings(**kw), consumer, admin or StubAdmin({}), events, clock=clock or (lambda: 0.0), retries=2
    )


def test_an_assignment_is_paused_at_once_and_starts_at_the_committed_offsets(tmp_path):
    consumer = StubConsumer(committed={0: 42}, watermarks=(3, 90))
    m = member(consumer, tmp_path=tmp_path, starting_offsets="earliest")
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


def test_a_partition_without_a_commit_starts_where_sparks_starting_options_say(tmp_path):
    consumer = StubConsumer(committed={0: 42}, watermarks=(3, 90))
    m = member(consumer, starting_by_offset=((("load", 1), 7), (("load", 2), -1)), starting_offsets="earliest")
    m._on_assign(consumer, [TopicPartition("load", p) for p in range(4)])
    assert {k: o.start for k, o in m.assignment.owned().items()} == {"load:0": 42, "load:1": 7, "load:2": 90,
                                                                     "load:3": 3}  # fmt: skip
    m = member(consumer, starting_timestamp=2500)
    m._on_assign(consumer, [TopicPartition("load", 0), TopicPartition("load", 1)])
    assert {k: o.start for k, o in m.assignment.owned().items()} == {"load:0": 42, "load:1": 250}


def test_a_starting_timestamp_after_every_record_fails_unless_the_strategy_is_latest():
    consumer = StubConsumer(watermarks=(3, 90))
    m = member(consumer, starting_by_timestamp=((("load", 1), 20_000),), timestamp_strategy="latest")
    m._on_assign(consumer, [TopicPartition("load", 1)])
    assert m.assignment.owned()["load:1"].start == 90
    m = member(consumer, starting_timestamp=20_000)
    with pytest.raises(
        SettingError, match="load:1 has no record at or after the starting timestamp 20000 .*Strategy=latest"
    ):
        m._on_assign(consumer, [TopicPartition("load", 1)])


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
    m.admin.ends[0] = 20
    end = m.latest()
    assert m.commit(end) == {}
    assert len(consumer.commits) == 1


def test_a_finished_batch_is_committed_when_spark_asks_for_the_next_one_before_a_revocation_can_skip_it():
    """Spark plans batch n+1 (latestOffset), writes its offsets to the checkpoint and only then reports batch n
    done (commit): a partition revoked, or the driver killed, in between would leave batch n uncommitted, and
    its new owner would read batches n and n+1 again. Batch n is committed when Spark asks for n+1's end."""
    consumer = StubConsumer(committed={0: 0, 1: 0})
    m = member(consumer, StubAdmin({0: 10, 1: 12}))
    m._on_assign(consumer, [TopicPartition("load", 0), TopicPartition("load", 1)])
    first = m.latest()  # batch 1: both partitions; it runs
    assert consumer.commits == []
    m.admin.ends.update({0: 20, 1: 22})
    second = m.latest()  # Spark asks for batch 2's end: batch 1 has finished
    assert consumer.commits == [{("load", 0): 10, ("load", 1): 12}]
    m._on_revoke(consumer, [TopicPartition("load", 1)])
    assert m.commit(first) == {}  # Spark's own report of batch 1: nothing left to send
    assert consumer.commits == [{("load", 0): 10, ("load", 1): 12}]
    m.admin.ends.update({0: 30})
    m.latest()  # batch 2 finished: only the partition still owned is committed
    assert consumer.commits[1:] == [{("load", 0): 20}]
    assert m.commit(second) == {}


def test_a_fatal_error_fails_spark_at_its_next_call():
    m = member(StubConsumer())
    m._fail("the group member got GROUP_AUTHORIZATION_FAILED: not authorized")
    with pytest.raises(SourceError, match="GROUP_AUTHORIZATION_FAILED"):
        m.latest()


def unreadable(error):
    """A member owning load:0 (committed at 5) whose end offset the admin refuses with error, on a clock the
    test sets (now[0]), with a 30 s offsets timeout: (member, its consumer, the clock)."""
    now = [0.0]
    consumer = StubConsumer(committed={0: 5})
    m = member(consumer, StubAdmin({0: error}), clock=lambda: now[0], offsets_timeout=30)
    m._on_assign(consumer, [TopicPartition("load", 0)])
    return m, consumer, now


def test_an_end_offset_unreadable_too_long_fails_the_query():
    m, _, now = unreadable(KafkaError(KafkaError.LEADER_NOT_AVAILABLE, "no leader"))
    assert m.latest()["load:0"]["to"] == 5  # held back, not failed
    now[0] = 31.0
    with pytest.raises(SourceError, match="could not be read for 30 s"):
        m.latest()


def test_an_end_refused_for_a_stale_leader_epoch_is_read_again_after_the_topics_metadata_is_asked_for():
    """librdkafka's admin ListOffsets keeps the leader epoch it cached until its 5-minute metadata refresh (seen on
    the testbed: refused for 40 s and more after a leader change, read at once after a list_topics)."""
    consumer = StubConsumer(committed={0: 5, 1: 5})
    admin = StubAdmin({0: 10, 1: 12}, stale={1})
    m = member(consumer, admin)
    m._on_assign(consumer, [TopicPartition("load", 0), TopicPartition("load", 1)])
    assert {name: r["to"] for name, r in m.latest().items()} == {"load:0": 10, "load:1": 12}
    assert admin.refreshed == ["load"]
    m.latest()
    assert admin.refreshed == ["load"]  # nothing refused: nothing refreshed


def test_a_partition_owned_again_gets_its_own_wait_not_the_one_before_it_was_lost():
    m, consumer, now = unreadable(KafkaError(KafkaError.FENCED_LEADER_EPOCH, "fenced"))
    m.latest()  # unreadable since 0
    m._on_lost(consumer, [TopicPartition("load", 0)])
    now[0] = 100.0
    m._on_assign(consumer, [TopicPartition("load", 0)])  # owned again before Spark asked in between
    assert m.latest()["load:0"]["to"] == 5  # held back 0 s, not failed for the 100 s it was not owned
    now[0] = 131.0
    with pytest.raises(SourceError, match="could not be read for 30 s"):
        m.latest()


def test_close_leaves_the_group():
    consumer = StubConsumer()
    m = member(consumer)
    m.close()
    assert consumer.closed


# -- the executors: a range read on a fake consumer -----------------------------------------------


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
    """The rows of a range read: (key, value, topic, partition, offset, timestamp ms, timestampType, ...)."""
    chunks = groupmember.read_range(
        settings(**kw), "load", 0, start, end, lambda config: consumer, **({"clock": clock} if clock else {})
    )
    return [row for chunk in chunks for row in chunk.rows()]


def test_a_range_is_read_exactly_and_from_its_start():
    consumer = ReadConsumer([[Msg(9), Msg(10), Msg(11)], [Msg(12), Msg(13), Msg(14)]])
    rows = read(consumer, 10, 13)
    assert [r[4] for r in rows] == [10, 11, 12]
    assert consumer.first_assigned[0].offset == 10
    assert rows[0] == (None, b"v10", "load", 0, 10, 1010, 0)


def test_once_its_range_is_read_the_reader_lets_go_of_the_partition_so_nothing_is_fetched_ahead():
    consumer = ReadConsumer([[Msg(10), Msg(11)], [Msg(12), Msg(13)]])
    read(consumer, 10, 12)
    assert consumer.assigned is None
    assert [r[4] for r in read(consumer, 12, 14)] == [12, 13], "the next range of the partition was not read"


def test_offsets_without_records_inside_the_range_are_skipped():
    consumer = ReadConsumer([[Msg(10), Msg(13)], [Msg(14)]])
    assert [r[4] for r in read(consumer, 10, 15)] == [10, 13, 14]


def test_a_range_ending_in_a_marker_ends_by_the_position():
    consumer = ReadConsumer([[Msg(10)], []], position=12)
    assert [r[4] for r in read(consumer, 10, 12)] == [10]


def test_an_error_fails_the_task_and_drops_the_consumer():
    gone = KafkaError(KafkaError._AUTO_OFFSET_RESET, "offset out of range")
    consumer = ReadConsumer([[Msg(0, error=gone)]])
    with pytest.raises(SourceError, match="reading \\[10, 20\\) failed: offset out of range"):
        read(consumer, 10, 20)
    assert consumer.closed
    assert not groupmember._READERS


def test_a_read_that_does_not_finish_in_time_fails():
    now = iter([0.0, 0.0, 5.0, 200.0])
    consumer = ReadConsumer([[Msg(10)], [], []])
    with pytest.raises(SourceError, match="read to 11 of \\[10, 20\\)"):
        read(consumer, 10, 20, clock=lambda: next(now))


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
