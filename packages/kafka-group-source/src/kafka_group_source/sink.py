"""A file sink for foreachBatch that makes the source's at-least-once delivery easy to judge.

    query = rows.writeStream.foreachBatch(BatchFiles("/data/sink", dc="dc1")).option("checkpointLocation", ...)

Each micro-batch goes to its own file on the driver's host, and a line about it to a log:
    batch-<id>.jsonl   one JSON array per row, the DataFrame's columns in order (binary columns, such
                       as the source's key and value, as base64 text; timestamps in ISO 8601);
                       replaced whole when Spark runs the batch again (after a restart), so each
                       batch is there once
    batches.jsonl      one line per batch written: {"batch", "at", "dc", "records", "bytes",
                       "ranges": {"topic:partition": [first offset, last offset]}, "bytes_by_broker"}
The rows need the source's topic, partition and offset columns (the ranges
come from them); a "bytes" column is summed, a "broker" one (fetch.stats)
splits the bytes by the broker that served them.

Across jobs (two DCs, a handover) a record can reach two sinks: the
source's records are keyed by (topic, partition, offset), which is how a
reader of every DC's sink counts each once.

The rows travel to the driver, partition by partition: this sink is
for judging the delivery contract (the drills, the tests, a demo). A
pipeline's data goes to Spark's own sinks, written by the executors (a
file sink per DC's job, a table), and is merged idempotently by the key
(topic, partition, offset) (the package's README).
"""

from __future__ import annotations

import base64
import datetime
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


class Summary:
    """A batch's log entry, gathered row by row as the rows are written."""

    def __init__(self, columns):
        columns = list(columns)
        missing = [c for c in KEY_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"the sink's rows need the column(s) {', '.join(missing)} (of the kafka-group source)")
        self.at_topic, self.at_partition, self.at_offset = (columns.index(c) for c in KEY_COLUMNS)
        self.at_bytes = columns.index("bytes") if "bytes" in columns else None
        self.at_broker = columns.index("broker") if "broker" in columns else None
        self.records, self.bytes, self.ranges, self.by_broker = 0, 0, {}, Counter()

    def add(self, row):
        name, offset = key(row[self.at_topic], row[self.at_partition]), row[self.at_offset]
        first, last = self.ranges.get(name, (offset, offset))
        self.ranges[name] = (min(first, offset), max(last, offset))
        self.records += 1
        if self.at_bytes is not None:
            self.bytes += row[self.at_bytes] or 0
            if self.at_broker is not None:
                self.by_broker[str(row[self.at_broker])] += row[self.at_bytes] or 0

    def entry(self, batch, dc, at):
        entry = {
            "batch": batch,
            "at": at,
            "dc": dc,
            "records": self.records,
            "bytes": self.bytes if self.at_bytes is not None else None,
            "ranges": {name: list(span) for name, span in sorted(self.ranges.items())},
        }
        if self.at_bytes is not None and self.at_broker is not None:
            entry["bytes_by_broker"] = dict(sorted(self.by_broker.items()))
        return entry


def batch_entry(batch, columns, rows, dc, at):
    """The batches.jsonl line of one batch's rows (lists in the order of columns)."""
    summary = Summary(columns)
    for row in rows:
        summary.add(row)
    return summary.entry(batch, dc, at)


def as_json(value):
    """A value JSON has no type for: bytes as base64 text (the source's key and value), times in ISO 8601."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (datetime.datetime, datetime.date)):
        return value.isoformat()
    return str(value)


def write_batch(directory, batch, columns, rows, dc=None, clock=time.time):
    """Write one batch's rows (an iterable of lists in the order of columns) whole, one at a time, then log it;
    returns its log entry."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    summary = Summary(columns)
    path, tmp = directory / f"batch-{batch:09d}.jsonl", directory / f".batch-{batch:09d}.tmp"
    with tmp.open("w") as out:
        for row in rows:
            summary.add(row)
            out.write(json.dumps(list(row), default=as_json) + "\n")
    tmp.replace(path)
    entry = summary.entry(batch, dc, clock())
    with (directory / "batches.jsonl").open("a") as log:
        log.write(json.dumps(entry) + "\n")
    return entry


class BatchFiles:
    """foreachBatch's function: each micro-batch's rows to directory on the driver's host (see above), brought
    there partition by partition (toLocalIterator, at most two partitions at once), never the whole batch."""

    def __init__(self, directory, dc=None, clock=time.time):
        self.directory, self.dc, self.clock = Path(directory), dc, clock

    def __call__(self, frame, batch):
        # The next partition is fetched while one is written: at most two on the driver at a time.
        rows = frame.toLocalIterator(prefetchPartitions=True)
        write_batch(self.directory, batch, frame.columns, rows, self.dc, self.clock)


def read_sink(directory):
    """({batch id: [row tuple]}, [batch log entry]) of a sink directory on this host."""
    directory = Path(directory)
    files = {batch_id(p.name): [tuple(r) for r in parse_lines(p.read_text())] for p in directory.glob("batch-*.jsonl")}
    log = directory / "batches.jsonl"
    return dict(sorted(files.items())), parse_lines(log.read_text()) if log.exists() else []
