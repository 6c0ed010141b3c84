"""A file sink for foreachBatch that makes the source's at-least-once delivery easy to judge.

    query = rows.writeStream.foreachBatch(BatchFiles("/data/sink", dc="dc1")).option("checkpointLocation", ...)

Each micro-batch goes to its own file, and a line about it to a log:
    batch-<id>.jsonl   one JSON array per row, the DataFrame's columns in order; replaced whole
                       when Spark runs the batch again (after a restart), so each batch is there once
    batches.jsonl      one line per batch written: {"batch", "at", "dc", "records", "bytes",
                       "ranges": {"topic:partition": [first offset, last offset]}, "bytes_by_broker"}
The rows need the source's topic, partition and offset columns (the ranges
come from them); a "bytes" column is summed, a "broker" one (fetch.stats)
splits the bytes by the broker that served them.

Across jobs (two DCs, a handover) a record can reach two sinks: the
source's records are keyed by (topic, partition, offset), which is how a
reader of every DC's sink counts each once.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

from .plan import key

KEY_COLUMNS = ("topic", "partition", "offset")


def parse_lines(text):
    """The JSON values of a JSON lines text."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def batch_id(name):
    """The batch id of a batch-<id>.jsonl file name (or path)."""
    return int(Path(name).stem.split("-", 1)[1])


def batch_entry(batch, columns, rows, dc, at):
    """The batches.jsonl line of one batch's rows (lists in the order of columns)."""
    missing = [c for c in KEY_COLUMNS if c not in columns]
    if missing:
        raise ValueError(f"the sink's rows need the column(s) {', '.join(missing)} (of the kafka-group source)")
    at_topic, at_partition, at_offset = (columns.index(c) for c in KEY_COLUMNS)
    at_bytes = columns.index("bytes") if "bytes" in columns else None
    at_broker = columns.index("broker") if "broker" in columns else None
    ranges, by_broker = {}, Counter()
    for row in rows:
        name, offset = key(row[at_topic], row[at_partition]), row[at_offset]
        first, last = ranges.get(name, (offset, offset))
        ranges[name] = (min(first, offset), max(last, offset))
        if at_bytes is not None and at_broker is not None:
            by_broker[str(row[at_broker])] += row[at_bytes] or 0
    entry = {
        "batch": batch,
        "at": at,
        "dc": dc,
        "records": len(rows),
        "bytes": sum(row[at_bytes] or 0 for row in rows) if at_bytes is not None else None,
        "ranges": {name: list(span) for name, span in sorted(ranges.items())},
    }
    if at_bytes is not None and at_broker is not None:
        entry["bytes_by_broker"] = dict(sorted(by_broker.items()))
    return entry


def write_batch(directory, batch, columns, rows, dc=None, clock=time.time):
    """Write one batch's rows (lists in the order of columns) whole, then log it; returns its log entry."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    entry = batch_entry(batch, list(columns), rows, dc, clock())
    path, tmp = directory / f"batch-{batch:09d}.jsonl", directory / f".batch-{batch:09d}.tmp"
    tmp.write_text("".join(json.dumps(list(row)) + "\n" for row in rows))
    tmp.replace(path)
    with (directory / "batches.jsonl").open("a") as log:
        log.write(json.dumps(entry) + "\n")
    return entry


class BatchFiles:
    """foreachBatch's function: each micro-batch's rows, collected on the driver, to directory (see above)."""

    def __init__(self, directory, dc=None, clock=time.time):
        self.directory, self.dc, self.clock = Path(directory), dc, clock

    def __call__(self, frame, batch):
        columns = frame.columns
        rows = [[r[c] for c in columns] for r in frame.collect()]
        write_batch(self.directory, batch, columns, rows, self.dc, self.clock)


def read_sink(directory):
    """({batch id: [row tuple]}, [batch log entry]) of a sink directory on this host."""
    directory = Path(directory)
    files = {batch_id(p.name): [tuple(r) for r in parse_lines(p.read_text())] for p in directory.glob("batch-*.jsonl")}
    log = directory / "batches.jsonl"
    return dict(sorted(files.items())), parse_lines(log.read_text()) if log.exists() else []
