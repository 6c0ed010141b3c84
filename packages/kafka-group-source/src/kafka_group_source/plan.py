"""What the source plans and commits, as plain Python: no Spark, no Kafka client.

The source's driver side is a member of a Kafka consumer group. The group
decides which partitions this job reads; Spark's checkpoint decides where a
partition it keeps reading goes on from. This module holds that logic.

An offset (what Spark keeps in its checkpoint, one per micro-batch) is a
JSON dict with one entry per partition the job owned when it planned the
batch, keyed "topic:partition", in a fixed order:

    {"load:0": {"era": "3f9c01aa", "from": 1200, "to": 1350}, ...}

- era: one ownership of the partition by this job, a random id drawn when
  the group assigned it. While the job keeps the partition, the era stays.
- from: where that ownership began: the group's committed offset when the
  partition arrived (or the starting position, when the group had none).
- to: the end (exclusive) of what the batch reads.

A batch reads, for each partition of its end offset:
- the partition stayed (same era in the start offset): from the start
  offset's "to" (the previous batch's end, the checkpoint) to "to";
- the partition arrived (no entry in the start offset, or another era):
  from "from" (the group's committed offset) to "to".
So a batch's ranges follow from its two offsets alone, and a batch Spark
runs again after a restart reads exactly what it read the first time.

When nothing moved (no new records, no partition arrived or left), the end
offset is the previous one unchanged, so Spark plans no batch.

Commits: Spark runs one micro-batch at a time, so when it asks for the
next batch's end (latestOffset) the batch planned last has finished; the
member commits it then, before it reads who owns what (Spark's own report,
commit(end), comes after the next batch's offsets are in the checkpoint:
too late, were a partition revoked or the driver killed in between). Each
partition's "to" is committed to the group only while the job still owns
that partition in the same era; a partition revoked meanwhile belongs to
its new owner, whose progress must not be overwritten.
"""

from __future__ import annotations

import math
import secrets
import threading
import time
from dataclasses import dataclass

from .options import SourceError


class PlanError(SourceError):
    """An offset or a range that cannot be: a bug or a damaged checkpoint, never a setting."""


def key(topic, partition):
    return f"{topic}:{int(partition)}"


def split_key(name):
    """(topic, partition) of a "topic:partition" key (topic names never hold a colon)."""
    topic, sep, partition = name.rpartition(":")
    if not sep or not topic or not partition.isdigit():
        raise PlanError(f"{name!r} is not a topic:partition key")
    return topic, int(partition)


def ordered(entries):
    """The entries as a dict in (topic, partition) order: equal offsets serialize to equal JSON."""
    return {name: entries[name] for name in sorted(entries, key=split_key)}


def new_era():
    return secrets.token_hex(4)


@dataclass(frozen=True)
class Ownership:
    era: str
    start: int  # the group's committed offset when the partition arrived, or the starting position


class Assignment:
    """The partitions the group gave this member now, each with its era and start; thread-safe.

    The consumer's rebalance callbacks (the poll thread) call assigned() and
    revoked(); the planner (Spark's calls) reads owned().
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._owned = {}

    def assigned(self, starts):
        """starts: {key: start offset} of the partitions the group just assigned. Each begins a new era."""
        with self._lock:
            for name, start in starts.items():
                if int(start) < 0:
                    raise PlanError(f"{name}: start offset {start} is not an offset")
                self._owned[name] = Ownership(new_era(), int(start))

    def revoked(self, names):
        with self._lock:
            for name in names:
                self._owned.pop(name, None)

    def owned(self):
        """{key: Ownership} now."""
        with self._lock:
            return dict(self._owned)


def rate_limit(limit, bases, ends):
    """{key: end} with at most limit records over every partition, shared by each one's backlog (Spark's
    maxOffsetsPerTrigger: a partition's share rounded down, up below one so that none starves)."""
    sizes = {name: end - bases[name] for name, end in ends.items() if end - bases[name] > 0}
    total = sum(sizes.values())
    if total < 1:
        return dict(ends)
    out = {}
    for name, end in ends.items():
        if name in sizes:
            share = limit * sizes[name] / total
            out[name] = min(end, bases[name] + (math.ceil(share) if share < 1 else math.floor(share)))
        else:
            out[name] = end
    return out


def divide(parts, begin, end):
    """[begin, end) in parts ranges of about one size, the last taking the remainder (empty ones left out)."""
    out, remaining, start = [], end - begin, begin
    for part in range(parts):
        size = remaining // (parts - part)
        remaining -= size
        stop = min(start + size, end)
        if stop > start:
            out.append((start, stop))
        start = stop
    return out


def split(ranges, max_records=0, min_partitions=0):
    """Spark's tasks of a batch's [(topic, partition, from, to)]: a range split into tasks of at most max_records
    (maxRecordsPerPartition), then the largest split further until there are about min_partitions tasks
    (minPartitions), as Spark's Kafka source splits them."""
    ranges = [r for r in ranges if r[3] > r[2]]
    if max_records > 0:
        ranges = [(t, p, a, b) for t, p, s, e in ranges for a, b in divide(math.ceil((e - s) / max_records), s, e)]
    if min_partitions > len(ranges):
        total = sum(e - s for _t, _p, s, e in ranges)
        ranges = [
            (t, p, a, b)
            for t, p, s, e in ranges
            for a, b in divide(max(math.floor((e - s) / total * min_partitions + 0.5), 1), s, e)
        ]
    return ranges


class Planner:
    """Offsets for Spark from the assignment and the partitions' end offsets, and the batches' ranges."""

    def __init__(self, assignment, max_records=0, max_per_trigger=0, min_per_trigger=0, max_delay=0.0,
                 per_task=0, min_partitions=0, clock=time.monotonic):  # fmt: skip
        """max_records: at most this many records per partition per batch (0: no cap); max_per_trigger: at most
        this many over every partition (0: no cap); min_per_trigger: no batch until this many records are
        new, or max_delay seconds have passed since the last batch; per_task, min_partitions: how a batch's
        ranges are split into Spark tasks (split)."""
        self.assignment = assignment
        self.max_records, self.max_per_trigger = int(max_records), int(max_per_trigger)
        self.min_per_trigger, self.max_delay = int(min_per_trigger), float(max_delay)
        self.per_task, self.min_partitions = int(per_task), int(min_partitions)
        self.clock = clock
        self.last = {}  # the last end offset handed to Spark
        self.planned_at = clock()  # when the last batch was planned (the query's start before the first)

    @classmethod
    def of(cls, assignment, settings, clock=time.monotonic):
        """The planner of a source's Settings."""
        return cls(
            assignment,
            max_records=settings.max_records,
            max_per_trigger=settings.max_offsets_per_trigger,
            min_per_trigger=settings.min_offsets_per_trigger,
            max_delay=settings.max_trigger_delay_ms / 1000,
            per_task=settings.max_records_per_task,
            min_partitions=settings.min_partitions,
            clock=clock,
        )

    def latest(self, owned, high_watermarks):
        """The end offset of the next batch: every partition owned now, up to its high watermark.

        owned: assignment.owned() as the caller read it; high_watermarks: {key: end
        offset of the partition's log}. A partition whose end offset could not be
        read makes no progress in this batch.
        """
        bases, ends = {}, {}
        for name, own in owned.items():
            previous = self.last.get(name)
            bases[name] = previous["to"] if previous and previous["era"] == own.era else own.start
            ends[name] = max(bases[name], int(high_watermarks.get(name, bases[name])))
            if self.max_records > 0:
                ends[name] = min(ends[name], bases[name] + self.max_records)
        if self.max_per_trigger > 0:
            ends = rate_limit(self.max_per_trigger, bases, ends)
        same_owners = {(n, o.era) for n, o in owned.items()} == {(n, e["era"]) for n, e in self.last.items()}
        new = sum(ends[name] - bases[name] for name in ends)
        if (
            self.min_per_trigger > 0
            and same_owners
            and new < self.min_per_trigger
            and self.clock() - self.planned_at < self.max_delay
        ):
            return self.last  # too few records yet: no batch (Spark's minOffsetsPerTrigger, maxTriggerDelay)
        out = {}
        for name, own in owned.items():
            previous = self.last.get(name)
            if previous and previous["era"] == own.era and previous["to"] == ends[name]:
                out[name] = previous
            else:
                out[name] = {"era": own.era, "from": own.start, "to": ends[name]}
        out = ordered(out)
        if out != self.last:
            self.planned_at = self.clock()
        self.last = out
        return self.last

    def ranges(self, start, end):
        """[(topic, partition, from, to)] the batch from start to end reads, split into Spark's tasks (split);
        empty ranges left out."""
        out = []
        for name, entry in ordered(end).items():
            topic, partition = split_key(name)
            before = (start or {}).get(name)
            stayed = before is not None and before.get("era") == entry["era"]
            begin = int(before["to"]) if stayed else int(entry["from"])
            stop = int(entry["to"])
            if stop < begin:
                raise PlanError(f"{name}: the batch would end at {stop}, before it begins at {begin}")
            if stop > begin:
                out.append((topic, partition, begin, stop))
        return split(out, self.per_task, self.min_partitions)

    def to_commit(self, end):
        """{key: offset} of a finished batch to commit: its partitions still owned in the same era.

        Returns (commit, skipped) with skipped the partitions owned by another
        era or not at all (revoked since: their new owner commits them).
        """
        owned = self.assignment.owned()
        commit, skipped = {}, []
        for name, entry in ordered(end).items():
            own = owned.get(name)
            if own is not None and own.era == entry["era"]:
                commit[name] = int(entry["to"])
            else:
                skipped.append(name)
        return commit, skipped
