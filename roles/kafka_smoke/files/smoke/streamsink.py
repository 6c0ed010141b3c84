"""Reads and judges the streaming job's file sink (smoke.stream_job) against what a producer had acknowledged.

Plain data in, figures out:
    files    {batch id: [(partition, offset, run, seq, bytes)]}   the batch files
    rows     the rows of every batch file
    batches  [{"batch", "records", "at", "dc"}]        the job's batch log, in the order written
    acked    {(partition, seq)}                        what the producer of run had acknowledged
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path


def read_sink(sink):
    """(files, batches) of a sink directory."""
    sink = Path(sink)
    files = {}
    for path in sorted(sink.glob("batch-*.jsonl")):
        batch_id = int(path.stem.split("-", 1)[1])
        files[batch_id] = [tuple(json.loads(line)) for line in path.read_text().splitlines() if line.strip()]
    log = sink / "batches.jsonl"
    batches = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    return files, batches


def rows_of(files, ids=None):
    """The rows of the batch files (of ids only, when given), in batch order."""
    return [row for batch_id in sorted(files) if ids is None or batch_id in ids for row in files[batch_id]]


def judge(rows, acked, run):
    """Each acknowledged record must be in the sink, and each (partition, offset) once."""
    per_offset = Counter((row[0], row[1]) for row in rows)
    found = {(p, seq) for p, _offset, r, seq, _size in rows if r == run}
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
    for p, o, *_rest in rows_of(files, {i for i in files if i < first_batch}):
        last[p] = max(o, last.get(p, o))
    for p, o, *_rest in rows_of(files, {i for i in files if i >= first_batch}):
        first[p] = min(o, first.get(p, o))
    joins = {p: (last.get(p), first[p]) for p in sorted(first)}
    gaps = sorted(p for p, (a, b) in joins.items() if a is None or b != a + 1)
    return {"first_batch": first_batch, "joins": joins, "gaps": gaps}
