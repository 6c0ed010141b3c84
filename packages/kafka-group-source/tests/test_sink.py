"""The foreachBatch file sink: each batch written whole, replaced when Spark runs it again, logged with its ranges."""

import base64
import datetime
import json

import pytest

from kafka_group_source import sink

COLUMNS = ["topic", "partition", "offset", "run", "seq", "bytes", "broker"]


def row(p, o, seq=None, run="r1", size=10, broker=101):
    return ["load", p, o, run if seq is not None else None, seq, size, broker]


def test_batches_are_written_whole_and_logged_with_their_ranges(tmp_path):
    rows = [row(0, 5, 0), row(0, 6, 1), row(1, 2, 0, broker=None)]
    sink.write_batch(tmp_path, 3, COLUMNS, rows, "dc1", clock=lambda: 9)
    entry = json.loads((tmp_path / "batches.jsonl").read_text())
    assert entry == {
        "batch": 3, "at": 9, "dc": "dc1", "records": 3, "bytes": 30,
        "ranges": {"load:0": [5, 6], "load:1": [2, 2]}, "bytes_by_broker": {"101": 20, "None": 10},
    }  # fmt: skip
    files, batches = sink.read_sink(tmp_path)
    assert files == {3: [tuple(r) for r in rows]}
    assert batches == [entry]


def test_a_batch_run_again_replaces_its_file(tmp_path):
    sink.write_batch(tmp_path, 7, COLUMNS, [row(0, 1), row(0, 2)], clock=lambda: 1)
    sink.write_batch(tmp_path, 7, COLUMNS, [row(0, 1)], clock=lambda: 2)
    files, batches = sink.read_sink(tmp_path)
    assert files == {7: [tuple(row(0, 1))]}
    assert [b["records"] for b in batches] == [2, 1]
    assert not list(tmp_path.glob(".*.tmp"))


def test_rows_without_the_sources_key_columns_are_refused(tmp_path):
    with pytest.raises(ValueError, match="need the column\\(s\\) offset"):
        sink.write_batch(tmp_path, 0, ["topic", "partition", "value"], [["load", 0, "x"]])
    assert not (tmp_path / "batches.jsonl").exists()


def test_without_bytes_and_broker_columns_the_log_has_the_ranges_only(tmp_path):
    entry = sink.write_batch(tmp_path, 0, ["topic", "partition", "offset"], [["a", 0, 4]], clock=lambda: 0)
    assert entry["bytes"] is None
    assert "bytes_by_broker" not in entry
    assert entry["ranges"] == {"a:0": [4, 4]}


class Frame:
    """A micro-batch's DataFrame as foreachBatch hands it: its rows only one Spark partition at a time."""

    columns = ["key", "value", "topic", "partition", "offset", "timestamp"]

    def __init__(self, rows):
        self.rows, self.taken = rows, 0

    def toLocalIterator(self, prefetchPartitions=False):  # noqa: N802, N803  PySpark's names
        for row in self.rows:
            self.taken += 1
            yield row

    def collect(self):
        raise AssertionError("the whole batch collected onto the driver")


def test_batch_files_is_a_foreach_batch_function_and_takes_the_sources_binary_columns(tmp_path):
    stamp = datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    frame = Frame([(bytearray(b"k\x00"), b"\xffvalue", "a", 1, 9, stamp), (None, b"", "a", 1, 10, stamp)])
    sink.BatchFiles(tmp_path / "sink", dc="dc2", clock=lambda: 5)(frame, 12)
    files, batches = sink.read_sink(tmp_path / "sink")
    assert files == {12: [("awA=", "/3ZhbHVl", "a", 1, 9, "2025-01-02T03:04:05+00:00"),
                          (None, "", "a", 1, 10, "2025-01-02T03:04:05+00:00")]}  # fmt: skip
    assert base64.b64decode(files[12][0][1]) == b"\xffvalue"
    assert batches[0]["dc"] == "dc2"
    assert batches[0]["ranges"] == {"a:1": [9, 10]}
    assert frame.taken == 2
