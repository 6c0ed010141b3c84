"""The active/active job's file sink (smoke.active_job), and the drill's verdicts on the sinks of every DC.

Each DC's job writes its own sink directory:
    batch-<id>.jsonl   one row per record: [topic, partition, offset, run, seq, bytes, broker]
                       (run and seq of a load-harness record, else null; broker: the broker that
                       served it, when the job measures it); replaced whole when Spark runs the
                       batch again, so a batch is in its DC's sink once
    batches.jsonl      one line per batch written: {"batch", "at", "dc", "records", "bytes",
                       "ranges": {"topic:partition": [first offset, last offset]}}
    events.jsonl       the source's group member: assigned, revoked, lost, committed, ...

Idempotent by (topic, partition, offset): a record read by both DCs' jobs
(a handover) is one record of the union, counted once as a duplicate.
Plain data in, figures out; reading the files from the hosts is the
drill's business.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from .groupplan import key

HEAD_BYTES = 64  # enough of a value to hold a load-harness record's run and sequence number


def parse_head(head):
    """(run, seq) of a load-harness record's value (LOAD:<run>:<partition>:<seq>:...), else (None, None)."""
    parts = (head or "").split(":", 4)
    if len(parts) >= 4 and parts[0] == "LOAD":
        try:
            return parts[1], int(parts[3])
        except ValueError:
            return None, None
    return None, None


def batch_entry(batch_id, rows, dc, at):
    ranges, bytes_by_broker = {}, Counter()
    for topic, partition, offset, _run, _seq, size, broker in rows:
        name = key(topic, partition)
        first, last = ranges.get(name, (offset, offset))
        ranges[name] = (min(first, offset), max(last, offset))
        bytes_by_broker[str(broker)] += size
    return {
        "batch": batch_id,
        "at": at,
        "dc": dc,
        "records": len(rows),
        "bytes": sum(r[5] for r in rows),
        "ranges": {name: list(span) for name, span in sorted(ranges.items())},
        "bytes_by_broker": dict(sorted(bytes_by_broker.items())),
    }


def write_batch(sink, batch_id, rows, dc, clock=time.time):
    """Write one batch's rows (lists of [topic, partition, offset, run, seq, bytes, broker]) and log it."""
    sink = Path(sink)
    sink.mkdir(parents=True, exist_ok=True)
    path, tmp = sink / f"batch-{batch_id:09d}.jsonl", sink / f".batch-{batch_id:09d}.tmp"
    tmp.write_text("".join(json.dumps(row) + "\n" for row in rows))
    tmp.replace(path)
    entry = batch_entry(batch_id, rows, dc, clock())
    with (sink / "batches.jsonl").open("a") as log:
        log.write(json.dumps(entry) + "\n")
    return entry


def parse_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def parse_batch_files(texts):
    """{batch id: [row tuple]} of {file name: text} of batch-<id>.jsonl files."""
    out = {}
    for name, text in texts.items():
        batch_id = int(Path(name).stem.split("-", 1)[1])
        out[batch_id] = [tuple(row) for row in parse_lines(text)]
    return out


def judge(rows_by_dc, acked, run):
    """Missing and duplicate records over every DC's sink.

    rows_by_dc: {dc: [row]} (each DC's batch files, each batch once);
    acked: {(partition, seq)} the load harness of run had acknowledged.
    """
    per_offset = Counter()
    found = set()
    for rows in rows_by_dc.values():
        for topic, partition, offset, r, seq, *_rest in rows:
            per_offset[(topic, partition, offset)] += 1
            if r == run:
                found.add((partition, seq))
    missing = sorted(acked - found)
    duplicated = {k: n for k, n in per_offset.items() if n > 1}
    per_partition = Counter()
    for (topic, partition, _offset), n in duplicated.items():
        per_partition[key(topic, partition)] += n - 1
    return {
        "acked": len(acked),
        "records": sum(per_offset.values()),
        "distinct": len(per_offset),
        "missing": len(missing),
        "missing_sample": missing[:10],
        "duplicates": sum(n - 1 for n in duplicated.values()),
        "duplicates_by_partition": dict(sorted(per_partition.items())),
    }


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


def takeover(batches, partitions, killed_at):
    """When the surviving job first read a partition the stopped job owned, and when it had read all of them.

    batches: the survivor's batch log; partitions: the keys the stopped job
    owned when it was stopped. Seconds from killed_at, None if never.
    """
    pending, first, last = set(partitions), None, None
    for batch in sorted(batches, key=lambda b: b["at"]):
        if batch["at"] < killed_at:
            continue
        held = pending & set(batch.get("ranges", {}))
        if held:
            first = batch["at"] if first is None else first
            pending -= held
            if not pending:
                last = batch["at"]
                break
    return {
        "first_seconds": round(first - killed_at, 2) if first is not None else None,
        "all_seconds": round(last - killed_at, 2) if last is not None else None,
        "partitions": sorted(partitions),
        "not_taken": sorted(pending),
    }


def locality(rows, racks, dc):
    """The share of the record bytes a DC's job read that its own DC's brokers served.

    rows: the job's rows with the broker that served each; racks: {broker id:
    DC}. Bytes of an unknown broker count as not local. None without rows.
    """
    total = local = 0
    for row in rows:
        size, broker = row[5], row[6]
        total += size
        if broker is not None and racks.get(int(broker)) == dc:
            local += size
    return round(local / total, 4) if total else None


def bytes_by_dc(rows, racks):
    """{DC: record bytes} the rows were served from, by the broker that served each ("unknown" without one)."""
    out = Counter()
    for row in rows:
        broker = row[6]
        out[racks.get(int(broker), "unknown") if broker is not None else "unknown"] += row[5]
    return dict(out)


def duplicate_bound(duplicates_by_partition, handovers, batches_by_dc):
    """Per partition: its duplicates against one batch per handover (the largest batch any job read of it).

    handovers: {key: times the partition changed owner}. Returns
    {key: {"duplicates", "handovers", "largest_batch", "within"}}.
    """
    largest = Counter()
    for batches in batches_by_dc.values():
        for batch in batches:
            for name, (first, last) in batch.get("ranges", {}).items():
                largest[name] = max(largest[name], last - first + 1)
    out = {}
    for name in sorted(set(duplicates_by_partition) | set(handovers)):
        dup = duplicates_by_partition.get(name, 0)
        moves = handovers.get(name, 0)
        out[name] = {
            "duplicates": dup,
            "handovers": moves,
            "largest_batch": largest.get(name, 0),
            "within": dup <= moves * largest.get(name, 0),
        }
    return out


def handovers(events_by_dc):
    """{key: times it was assigned again after its first assignment}, over every DC's member events.

    Each new assignment starts the partition at the group's committed offset,
    which trails what its last owner read by at most that owner's last batch.
    """
    out = Counter()
    for events in events_by_dc.values():
        for event in events:
            if event.get("event") == "assigned":
                out.update(list(event.get("partitions", {})))
    return {name: n - 1 for name, n in sorted(out.items()) if n > 1}
