"""What jobs delivered, judged against the source's delivery contract: plain data in, figures out.

The contract (README): at-least-once; a partition that changes owner (a
job's restart, a rebalance, a DC lost) is read again from the group's
committed offset, which trails what its last owner read by at most that
owner's last batch of it: at most one batch of duplicates per partition
per handover, and nothing missing.

    rows_by_dc     {dc: [row]}: each DC's sink rows (sink.read_sink), each batch once, with the
                   source's topic, partition and offset as their first three fields
    batches_by_dc  {dc: [batch log entry]} (sink's batches.jsonl)
    events_by_dc   {dc: [member event]}: the source's events option (JSON lines: "at", "event",
                   "partitions", "owned", ...)
"""

from __future__ import annotations

from collections import Counter

from .plan import key


def duplicates(rows_by_dc):
    """Records over every DC's sink, by (topic, partition, offset): how many, how many distinct, and the
    duplicates (per partition, "topic:partition")."""
    per_offset = Counter(
        (topic, partition, offset) for rows in rows_by_dc.values() for topic, partition, offset, *_ in rows
    )
    per_partition = Counter()
    for (topic, partition, _offset), n in per_offset.items():
        if n > 1:
            per_partition[key(topic, partition)] += n - 1
    return {
        "records": sum(per_offset.values()),
        "distinct": len(per_offset),
        "duplicates": sum(per_partition.values()),
        "duplicates_by_partition": dict(sorted(per_partition.items())),
    }


def handovers(events_by_dc):
    """{partition key: [{"at", "dc", "start"}] of each time it was assigned again after its first assignment},
    in time order, over every DC's member events.

    Each new assignment starts the partition at the group's committed offset
    ("start"), which trails what its last owner read by at most that owner's
    last batch.
    """
    assigned = {}
    for dc, events in events_by_dc.items():
        for event in events:
            if event.get("event") == "assigned":
                for name, start in event.get("partitions", {}).items():
                    assigned.setdefault(name, []).append({"at": event.get("at", 0), "dc": dc, "start": start})
    return {
        name: sorted(found, key=lambda h: h["at"])[1:] for name, found in sorted(assigned.items()) if len(found) > 1
    }


def batch_before(handover, name, batches_by_dc):
    """The size of the batch a handover of partition name repeats: the batch that holds the offset its new
    owner starts at (the group's committed offset), of any job but the new owner since it got the partition;
    0 when none holds it (the old owner had committed all it read)."""
    sizes = [
        last - first + 1
        for dc, batches in batches_by_dc.items()
        for batch in batches
        for first, last in [batch.get("ranges", {}).get(name) or (None, None)]
        if first is not None
        and first <= handover["start"] <= last
        and not (dc == handover["dc"] and batch.get("at", 0) >= handover["at"])
    ]
    return max(sizes, default=0)


def duplicate_bound(duplicates_by_partition, moves, batches_by_dc):
    """Per partition: its duplicates against one batch per handover, the batch before each (batch_before).

    moves: handovers(); returns {key: {"duplicates", "handovers", "batches_before", "bound", "within"}}.
    """
    out = {}
    for name in sorted(set(duplicates_by_partition) | set(moves)):
        before = [batch_before(h, name, batches_by_dc) for h in moves.get(name, [])]
        dup = duplicates_by_partition.get(name, 0)
        out[name] = {
            "duplicates": dup,
            "handovers": len(before),
            "batches_before": before,
            "bound": sum(before),
            "within": dup <= sum(before),
        }
    return out


def owned_over_time(events):
    """[(at, frozenset of owned keys)] after each assignment change of one member's events."""
    out = []
    for event in events:
        if event.get("event") in ("assigned", "revoked", "lost"):
            out.append((event["at"], frozenset(event.get("owned", []))))
        elif event.get("event") in ("started", "closed"):
            out.append((event["at"], frozenset()))
    return out


def owned_at(timeline, at):
    """The keys owned at time at (the last change at or before it)."""
    owned = frozenset()
    for when, keys in timeline:
        if when > at:
            break
        owned = keys
    return owned


def changes_between(events, start, end):
    """The assignment changes (assigned, revoked, lost) in [start, end]: in a calm period, none."""
    return [e for e in events if e.get("event") in ("assigned", "revoked", "lost") and start <= e["at"] <= end]


def takeover(batches, partitions, stopped_at):
    """When a surviving job first read a partition a stopped job owned, and when it had read all of them.

    batches: the survivor's batch log; partitions: the keys the stopped job
    owned when it stopped. Seconds from stopped_at, None if never.
    """
    pending, first, last = set(partitions), None, None
    for batch in sorted(batches, key=lambda b: b["at"]):
        if batch["at"] < stopped_at:
            continue
        held = pending & set(batch.get("ranges", {}))
        if held:
            first = batch["at"] if first is None else first
            pending -= held
            if not pending:
                last = batch["at"]
                break
    return {
        "first_seconds": round(first - stopped_at, 2) if first is not None else None,
        "all_seconds": round(last - stopped_at, 2) if last is not None else None,
        "partitions": sorted(partitions),
        "not_taken": sorted(pending),
    }
