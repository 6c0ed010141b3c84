"""The Kafka side of the source: the driver's group member and the executors' range reads.

GroupMember (driver): one confluent-kafka consumer in the job's group
(KIP-848, group.protocol=consumer). It never reads a record: it pauses
every partition it is given, and a thread of its own polls it, which keeps
it in the group and runs the rebalance callbacks. Spark's driver-side calls
(latestOffset, partitions, commit) go through it to groupplan's Planner.

read_range (executors): reads exactly one partition's [from, to) with
assign(), never joining the group, as a client of the executor's DC
(client.rack), so follower fetching serves it from that DC's replicas.

The consumer, admin client and clock are passed in, so the logic runs in
unit tests without a cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from .checks import apply_group_configs, check_cluster, default_admin
from .options import SettingError, SourceError
from .plan import Assignment, Planner, key, split_key

# Errors after which the member can never be served: the query fails and
# the job's supervisor starts it again.
FATAL_CODES = {
    KafkaError.GROUP_AUTHORIZATION_FAILED,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._AUTHENTICATION,
}


class Events:
    """The member's events, one JSON object a line, with the time and the DC; nothing when path is empty."""

    def __init__(self, path, dc, clock=time.time):
        self.path, self.dc, self.clock = Path(path) if path else None, dc, clock
        self._lock = threading.Lock()
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, event, **fields):
        if not self.path:
            return
        line = json.dumps({"at": self.clock(), "dc": self.dc, "event": event, **fields}, sort_keys=True)
        with self._lock, self.path.open("a") as out:
            out.write(line + "\n")


class GroupMember:
    """The driver's consumer in the group: owns partitions, never reads them, commits finished batches."""

    def __init__(self, settings, consumer, admin, events, clock=time.monotonic, poll_seconds=0.2, retries=3):
        self.settings, self.consumer, self.admin, self.events = settings, consumer, admin, events
        self.clock, self.poll_seconds, self.retries = clock, poll_seconds, retries
        self.assignment = Assignment()
        self.planner = Planner.of(self.assignment, settings, clock)
        self.error = None  # the first fatal error, raised at Spark's next call
        self.stray_records = 0  # records the poll returned although every partition is paused
        self._unread_since = {}  # {(key, era): when its end offset was first unreadable in that ownership}
        self._settled = {}  # {key: the batch end entry last committed, or skipped as revoked}
        self._stop = threading.Event()
        self._thread = None
        # Work for the consumer that must not run beside its poll: librdkafka hands a synchronous
        # commit's result to the queue the poll serves, so a commit made on another thread while
        # the poll runs never returns. The poll thread runs these between two polls.
        self._requests = queue.Queue()

    # -- the group ------------------------------------------------------------------------

    def start(self):
        self.consumer.subscribe(
            self.settings.subscription(), on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_lost
        )
        self._thread = threading.Thread(target=self._poll_loop, name="group-member-poll", daemon=True)
        self._thread.start()
        self.events.write("started", group=self.settings.group, topics=self.settings.subscription())
        return self

    def _poll_loop(self):
        while not self._stop.is_set():
            self._serve_requests()
            try:
                msg = self.consumer.poll(self.poll_seconds)
            except Exception as exc:  # a rebalance callback failed, or the client did
                self._fail(f"the group member's poll failed: {exc}")
                return
            if msg is None:
                continue
            err = msg.error()
            if err is None:
                self.stray_records += 1
            elif err.fatal() or err.code() in FATAL_CODES:
                self._fail(f"the group member got {err.name()}: {err.str()}")
                return
            else:
                self.events.write("error", error=err.name(), detail=err.str())

    def _serve_requests(self):
        while True:
            try:
                call, done, out = self._requests.get_nowait()
            except queue.Empty:
                return
            try:
                out["value"] = call()
            except Exception as exc:  # handed back to the caller
                out["error"] = exc
            done.set()

    def _on_poll_thread(self, call, timeout=60.0):
        """call() on the poll thread when it runs (else here), and its result."""
        if self._thread is None or not self._thread.is_alive() or threading.current_thread() is self._thread:
            return call()
        done, out = threading.Event(), {}
        self._requests.put((call, done, out))
        if not done.wait(timeout):
            raise SourceError(f"the group member's poll thread did not serve a request in {timeout:.0f} s")
        if "error" in out:
            raise out["error"]
        return out.get("value")

    def _fail(self, message):
        if self.error is None:
            self.error = message
            self.events.write("failed", error=message)

    def _on_assign(self, consumer, partitions):
        # Assigned and paused at once: this consumer only holds partitions for the job.
        consumer.incremental_assign(partitions)
        consumer.pause(partitions)
        if not partitions:
            return
        starts = self._starts(partitions)
        self.assignment.assigned(starts)
        self.events.write("assigned", partitions=starts, owned=sorted(self.assignment.owned()))

    def _on_revoke(self, consumer, partitions):
        names = [key(tp.topic, tp.partition) for tp in partitions]
        self.assignment.revoked(names)
        if names:
            self.events.write("revoked", partitions=sorted(names), owned=sorted(self.assignment.owned()))

    def _on_lost(self, consumer, partitions):
        names = [key(tp.topic, tp.partition) for tp in partitions]
        self.assignment.revoked(names)
        if names:
            self.events.write("lost", partitions=sorted(names), owned=sorted(self.assignment.owned()))

    def _starts(self, partitions):
        """{key: start} of arriving partitions: the group's committed offset, or where the options start a
        partition the group has none for (Settings.starting)."""
        wanted = [TopicPartition(tp.topic, tp.partition) for tp in partitions]
        committed = self._retry("read the group's committed offsets", lambda: self.consumer.committed(wanted, 10))
        out, by_time = {}, []
        for tp in committed:
            name = key(tp.topic, tp.partition)
            if tp.error is not None:
                raise SourceError(f"committed offset of {name}: {tp.error}")
            where = self.settings.starting(tp.topic, tp.partition) if tp.offset < 0 else tp.offset
            if isinstance(where, tuple):
                by_time.append(TopicPartition(tp.topic, tp.partition, where[1]))
            elif isinstance(where, int):
                out[name] = where
            else:
                low, high = self._watermarks(tp)
                out[name] = low if where == "earliest" else high
        if by_time:
            found = self._retry(
                "find the offsets of the starting timestamps", lambda: self.consumer.offsets_for_times(by_time, 10)
            )
            for tp, asked in zip(found, by_time, strict=True):
                name = key(tp.topic, tp.partition)
                if tp.error is not None:
                    raise SourceError(f"the offset of {name} at {asked.offset} ms: {tp.error}")
                if tp.offset >= 0:
                    out[name] = tp.offset
                elif self.settings.timestamp_strategy == "latest":
                    out[name] = self._watermarks(tp)[1]
                else:
                    raise SettingError(
                        f"{name} has no record at or after the starting timestamp {asked.offset} "
                        "(startingTimestamp, startingOffsetsByTimestamp): startingOffsetsByTimestampStrategy=latest "
                        "starts such a partition at its end"
                    )
        return out

    def _watermarks(self, tp):
        return self._retry(
            "read a partition's first and end offsets",
            lambda: self.consumer.get_watermark_offsets(TopicPartition(tp.topic, tp.partition), 10),
        )

    def _retry(self, what, call):
        for attempt in range(self.retries):
            try:
                return call()
            except KafkaException as exc:
                if attempt == self.retries - 1:
                    raise SourceError(f"cannot {what}: {exc}") from exc
                time.sleep(1)
        raise AssertionError("unreachable")

    # -- Spark's calls (the driver's source runner) --------------------------------------

    def check(self):
        if self.error:
            raise SourceError(self.error)

    def latest(self):
        self.check()
        # Spark asks for the next batch's end only once the batch it planned last has finished (its
        # micro-batches run one at a time): that batch is committed here, before the partitions' owners
        # are read. Committed later (at Spark's commit(), after the next batch's offsets are in its
        # checkpoint), a partition revoked or a driver killed in between would repeat two batches.
        self.commit(self.planner.last)
        owned = self.assignment.owned()
        high = self.high_watermarks(owned)
        return self.planner.latest(owned, high)

    def high_watermarks(self, owned):
        """{key: end offset} of the owned partitions ({key: Ownership}; read committed); a partition unreadable
        for longer than offsets_timeout in one ownership fails the query, a shorter outage only holds it back."""
        # Timed per ownership: a partition lost and owned again (a new era) is waited for afresh.
        eras = {(name, own.era) for name, own in owned.items()}
        self._unread_since = {held: since for held, since in self._unread_since.items() if held in eras}
        names = sorted(owned)
        if not names:
            return {}
        out = {}
        unread = self._ends(names, out)
        if unread:
            # librdkafka's admin client asks with the leader epoch its metadata holds and keeps that until its next
            # periodic refresh (topic.metadata.refresh.interval.ms, 5 minutes): after a leader change every ask is
            # refused FENCED_LEADER_EPOCH for minutes. Asking for the topics' metadata refreshes it; then once more.
            for topic in sorted({split_key(name)[0] for name in unread}):
                with contextlib.suppress(KafkaException):  # the second ask tells
                    self.admin.list_topics(topic=topic, timeout=10)
            unread = self._ends(sorted(unread), out)
        for name, exc in unread.items():
            since = self._unread_since.setdefault((name, owned[name].era), self.clock())
            self.events.write("offsets-unread", partition=name, error=str(exc))
            if self.clock() - since > self.settings.offsets_timeout:
                raise SourceError(
                    f"the end offset of {name} could not be read for {self.settings.offsets_timeout:.0f} s: {exc}"
                ) from exc
        for name in out:
            self._unread_since.pop((name, owned[name].era), None)
        return out

    def _ends(self, names, out):
        """One ListOffsets of the partitions' ends: each end read goes into out; returns {key: error} of the rest."""
        from confluent_kafka.admin import OffsetSpec

        wanted = {TopicPartition(*split_key(name)): OffsetSpec.latest() for name in names}
        unread = {}
        for tp, future in self.admin.list_offsets(wanted, request_timeout=10).items():
            name = key(tp.topic, tp.partition)
            try:
                out[name] = future.result().offset
            except KafkaException as exc:
                unread[name] = exc
        return unread

    def ranges(self, start, end):
        self.check()
        return self.planner.ranges(start, end)

    def commit(self, end):
        """Commit a finished batch's offsets for the partitions still owned in the same era (synchronously);
        returns what this call committed: an offset committed before (by latest()) is not sent again.

        Judged and sent on the poll thread, between two polls: a revocation (a callback of the poll) lands
        wholly before or after it, never between the judgement and the commit."""
        return self._on_poll_thread(lambda: self._commit_owned(end))

    def _commit_owned(self, end):
        commit, skipped = self.planner.to_commit(end)
        skipped = [name for name in skipped if self._settled.get(name) != end[name]]
        if skipped:
            self.events.write("commit-skipped", partitions=skipped)
            self._settled.update({name: end[name] for name in skipped})
        commit = {name: offset for name, offset in commit.items() if self._settled.get(name) != end[name]}
        if not commit:
            return commit
        offsets = [TopicPartition(*split_key(name), offset) for name, offset in commit.items()]
        done = self._commit_now(commit, offsets)
        self._settled.update({name: end[name] for name in done})
        return done

    def _commit_now(self, commit, offsets):
        for attempt in range(self.retries):
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
                self.events.write("committed", offsets=commit)
                return commit
            except KafkaException as exc:
                err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                # Fenced or no longer in the group: the partitions are someone else's now.
                if err is not None and (err.fatal() or not err.retriable()) or attempt == self.retries - 1:
                    self.events.write("commit-failed", offsets=commit, error=str(exc))
                    return {}
                time.sleep(1)
        return {}

    def close(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.consumer.close()  # leaves the group: the other members get its partitions at once
        finally:
            self.events.write("closed")


# -- the executors -------------------------------------------------------------------------

_READERS = {}  # one consumer per Python worker and settings, kept across tasks


class _Reader:
    def __init__(self, settings, factory):
        self.stats = None
        self.stats_at = 0.0
        config = settings.reader_config()
        if settings.include_broker:
            config["stats_cb"] = self._on_stats
        self.consumer = factory(config)

    def _on_stats(self, raw):
        self.stats = json.loads(raw)
        self.stats_at = time.monotonic()

    def fresh_broker(self, topic, partition, wait=1.0):
        """The broker of the statistics that come after now (at most wait seconds for them), or None."""
        asked = time.monotonic()
        deadline = asked + wait
        while self.stats_at <= asked and time.monotonic() < deadline:
            self.consumer.poll(0.05)
        return self.broker(topic, partition)

    def broker(self, topic, partition):
        """The broker the partition is fetched from now, by the last statistics (None: unknown)."""
        try:
            broker = self.stats["topics"][topic]["partitions"][str(partition)]["broker"]
        except (KeyError, TypeError):
            return None
        return broker if broker >= 0 else None


def reader_for(settings, factory):
    found = _READERS.get(settings)
    if found is None:
        found = _READERS[settings] = _Reader(settings, factory)
    return found


CHUNK = 10_000  # records per chunk a read yields: one Arrow batch to the JVM (Spark's maxRecordsPerBatch)
CONSUME = 10_000  # records asked of librdkafka at a time


@dataclass
class Chunk:
    """Records of one partition, by column (Spark's Kafka schema), as a read yields them."""

    topic: str
    partition: int
    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)
    offsets: list = field(default_factory=list)
    stamps: list = field(default_factory=list)  # ms since the epoch (-1: none, as the Java client gives it)
    kinds: list = field(default_factory=list)  # Spark's timestampType: 0 create time, 1 log append time, -1 none
    headers: list | None = None  # [(key, value)] or None per record, with includeHeaders
    broker: int | None = None  # the broker that served the records (includeBroker)

    def rows(self):
        """The records as tuples in the order of Settings.columns() (for tests and small reads)."""
        n = len(self.offsets)
        extra = [self.headers] if self.headers is not None else []
        columns = [self.keys, self.values, [self.topic] * n, [self.partition] * n, self.offsets, self.stamps,
                   self.kinds, *extra]  # fmt: skip
        return [tuple(c[i] for c in columns) for i in range(n)]


def read_range(settings, topic, partition, start, end, factory, clock=time.monotonic, timings=None):
    """Chunks of the records of [start, end) of one partition, in offset order.

    Offsets missing inside the range (compaction, transaction markers) are
    skipped; a range the log no longer holds fails the read (failOnDataLoss,
    else the read skips to what the log holds); a client error, or a read
    that makes no progress for read_timeout seconds, fails it. timings: a
    dict the seconds spent in librdkafka's consume ("fetch": its wall time,
    "fetch_cpu": this thread's CPU in it, making the messages) and taking the
    records apart ("extract", "extract_cpu") are added to.
    """
    reader = reader_for(settings, factory)
    consumer = reader.consumer
    timings = {} if timings is None else timings
    spent = dict.fromkeys(("fetch", "fetch_cpu", "extract", "extract_cpu"), 0.0)
    consumer.assign([TopicPartition(topic, partition, start)])
    deadline = clock() + settings.read_timeout
    position = start
    chunks, chunk = [], _chunk(settings, topic, partition)
    try:
        while position < end:
            if clock() > deadline:
                raise SourceError(
                    f"{key(topic, partition)}: read to {position} of [{start}, {end}), then nothing for "
                    f"{settings.read_timeout:.0f} s (kafkaConsumer.pollTimeoutMs)"
                )
            began, began_cpu = time.perf_counter(), time.thread_time()
            messages = consumer.consume(num_messages=min(CONSUME, end - position), timeout=0.5)
            fetched, fetched_cpu = time.perf_counter(), time.thread_time()
            spent["fetch"] += fetched - began
            spent["fetch_cpu"] += fetched_cpu - began_cpu
            if not messages:
                # Offsets with no record to give (a transaction's marker at the end) still move the position.
                at = consumer.position([TopicPartition(topic, partition)])[0].offset
                if at is not None and at > position:
                    position, deadline = at, clock() + settings.read_timeout
                continue
            before = position
            position = _take(messages, chunk, topic, partition, start, end, position)
            spent["extract"] += time.perf_counter() - fetched
            spent["extract_cpu"] += time.thread_time() - fetched_cpu
            if position > before:
                deadline = clock() + settings.read_timeout
            if len(chunk.offsets) >= CHUNK:
                if settings.include_broker:
                    chunks.append(chunk)
                else:
                    yield chunk
                chunk = _chunk(settings, topic, partition)
        if settings.include_broker:
            chunks.append(chunk)
            broker = reader.fresh_broker(topic, partition)
            for done in chunks:
                done.broker = broker
                yield done
        elif chunk.offsets:
            yield chunk
        # Assigned until its next range, librdkafka would go on fetching the
        # partition into a queue the next assign() throws away: bytes the brokers
        # serve and no batch holds (about five times what the job kept, measured).
        consumer.unassign()
    except BaseException:
        _READERS.pop(settings, None)
        consumer.close()
        raise
    finally:
        for name, seconds in spent.items():
            timings[name] = timings.get(name, 0.0) + seconds


def _chunk(settings, topic, partition):
    return Chunk(topic, partition, headers=[] if settings.include_headers else None)


def _take(messages, chunk, topic, partition, start, end, position):
    """Add the messages of [position, end) to chunk; the position after them."""
    keys, values, offsets = chunk.keys.append, chunk.values.append, chunk.offsets.append
    stamps, kinds = chunk.stamps.append, chunk.kinds.append
    headers = chunk.headers.append if chunk.headers is not None else None
    for msg in messages:
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                continue
            raise SourceError(f"{key(topic, partition)}: reading [{start}, {end}) failed: {err.str()}")
        offset = msg.offset()
        if offset < position or msg.partition() != partition or msg.topic() != topic:
            continue
        if offset >= end:
            return end
        keys(msg.key())
        values(msg.value())
        offsets(offset)
        kind, stamp = msg.timestamp()
        stamps(stamp)
        kinds(kind - 1)  # librdkafka's 0 none, 1 create, 2 log append: Java's (and Spark's) -1, 0, 1
        if headers is not None:
            headers(msg.headers())
        position = offset + 1
    return position


def default_consumer(config):
    from confluent_kafka import Consumer

    return Consumer(config)


def member_for(settings, consumer_factory=default_consumer, admin_factory=default_admin):
    """The group member of settings, started: once its topics and DC are found in the cluster and the group's
    configs the options give are set (SettingError otherwise, before it joins the group)."""
    admin = admin_factory(settings.admin_config())
    check_cluster(admin, settings.topics, settings.rack)
    apply_group_configs(admin, settings.group, settings.group_configs())
    events = Events(settings.events, settings.rack)
    events.write("host", host=socket.gethostname(), pid=os.getpid())
    return GroupMember(settings, consumer_factory(settings.member_config()), admin, events).start()
