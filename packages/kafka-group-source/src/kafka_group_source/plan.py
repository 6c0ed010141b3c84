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

Commits: Spark reports a batch done (commit(end)) when it plans the next
one. Each partition's "to" is committed to the group only while the job
still owns that partition in the same era; a partition revoked meanwhile
belongs to its new owner, whose progress must not be overwritten.
"""

from __future__ import annotations

import secrets
import threading
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


class Planner:
    """Offsets for Spark from the assignment and the partitions' end offsets, and the batches' ranges."""

    def __init__(self, assignment, max_records=0):
        """max_records: at most this many records per partition per batch (0: no cap)."""
        self.assignment = assignment
        self.max_records = int(max_records)
        self.last = {}  # the last end offset handed to Spark

    def latest(self, owned, high_watermarks):
        """The end offset of the next batch: every partition owned now, up to its high watermark.

        owned: assignment.owned() as the caller read it; high_watermarks: {key: end
        offset of the partition's log}. A partition whose end offset could not be
        read makes no progress in this batch.
        """
        out = {}
        for name, own in owned.items():
            previous = self.last.get(name)
            base = previous["to"] if previous and previous["era"] == own.era else own.start
            to = max(base, int(high_watermarks.get(name, base)))
            if self.max_records > 0:
                to = min(to, base + self.max_records)
            if previous and previous["era"] == own.era and previous["to"] == to:
                out[name] = previous
            else:
                out[name] = {"era": own.era, "from": own.start, "to": to}
        self.last = ordered(out)
        return self.last

    def ranges(self, start, end):
        """[(topic, partition, from, to)] the batch from start to end reads (empty ranges left out)."""
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
        return out

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
