"""Judges the streaming drill's sink (kafka_smoke.stream_job's) against what a producer had acknowledged.

Plain data in, figures out:
    files    {batch id: [(topic, partition, offset, run, seq, bytes)]}   the batch files
    rows     the rows of every batch file
    batches  [{"batch", "records", "at", "dc", ...}]   the job's batch log, in the order written
    acked    {(partition, seq)}                        what the producer of run had acknowledged
The job reads one topic; kafka_group_source.sink.read_sink reads a sink directory.
"""

from __future__ import annotations

from collections import Counter


def rows_of(files, ids=None):
    """The rows of the batch files (of ids only, when given), in batch order."""
    return [row for batch_id in sorted(files) if ids is None or batch_id in ids for row in files[batch_id]]


def judge(rows, acked, run):
    """Each acknowledged record must be in the sink, and each (partition, offset) once."""
    per_offset = Counter((row[1], row[2]) for row in rows)
    found = {(p, seq) for _topic, p, _offset, r, seq, _size in rows if r == run}
    missing = sorted(acked - found)
    return {
        "acked": len(acked),
        "rows": len(rows),
        "missing": len(missing),
        "missing_sample": missing[:10],
        "duplicated_offsets": sum(1 for n in per_offset.values() if n > 1),
        "duplicate_rows": sum(n - 1 for n in per_offset.values()),
        "value_bytes": sum(row[-1] for row in rows),
    }


def longest_stall(batches, start, end):
    """The longest time from start to end in which no batch brought a record: the job's longest stall."""
    times = sorted([start, *(b["at"] for b in batches if b["records"] and start <= b["at"] <= end), end])
    return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)


def resumed(files, batches, dc):
    """Where the job started in dc took over: the first batch it wrote, and, per partition, the last offset
    of the batches before it against the first offset it read. It resumed where the other stopped when
    every partition's first offset follows the last one (a replayed batch is rewritten whole, same id)."""
    first_batch = min((b["batch"] for b in batches if b["dc"] == dc), default=None)
    if first_batch is None:
        return {"first_batch": None, "joins": {}, "gaps": []}
    last, first = {}, {}
    for _topic, p, o, *_rest in rows_of(files, {i for i in files if i < first_batch}):
        last[p] = max(o, last.get(p, o))
    for _topic, p, o, *_rest in rows_of(files, {i for i in files if i >= first_batch}):
        first[p] = min(o, first.get(p, o))
    joins = {p: (last.get(p), first[p]) for p in sorted(first)}
    gaps = sorted(p for p, (a, b) in joins.items() if a is None or b != a + 1)
    return {"first_batch": first_batch, "joins": joins, "gaps": gaps}
