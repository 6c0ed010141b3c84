"""The streaming drill's sink, as the job's sink helper writes it, judged against what the producer acknowledged."""

from kafka_group_source.sink import read_sink, write_batch
from testkit import streamsink

COLUMNS = ["topic", "partition", "offset", "run", "seq", "bytes"]


def write(sink, batch_id, rows, dc, at):
    write_batch(sink, batch_id, COLUMNS, [["load", *row] for row in rows], dc, clock=lambda: at)


def test_a_whole_sink_is_judged_complete(tmp_path):
    write(tmp_path, 0, [[0, 10, "r", 0, 512], [1, 20, "r", 0, 512], [1, 19, None, None, 9]], "dc1", 100.0)
    write(tmp_path, 1, [[0, 11, "r", 1, 512]], "dc1", 102.0)
    files, batches = read_sink(tmp_path)
    assert sorted(files) == [0, 1]
    assert [b["batch"] for b in batches] == [0, 1]
    verdict = streamsink.judge(streamsink.rows_of(files), {(0, 0), (0, 1), (1, 0)}, "r")
    assert verdict["missing"] == 0
    assert verdict["duplicated_offsets"] == 0
    assert verdict["value_bytes"] == 3 * 512 + 9


def test_missing_records_and_repeated_offsets_are_counted():
    rows = [("load", *row) for row in [(0, 10, "r", 0, 1), (0, 10, "r", 0, 1), (0, 10, "r", 0, 1),
                                       (1, 5, "other-run", 1, 1)]]  # fmt: skip
    verdict = streamsink.judge(rows, {(0, 0), (0, 1), (1, 1)}, "r")
    assert verdict["missing"] == 2
    assert verdict["missing_sample"] == [(0, 1), (1, 1)]
    assert verdict["duplicated_offsets"] == 1
    assert verdict["duplicate_rows"] == 2


def test_a_replayed_batch_is_rewritten_not_added(tmp_path):
    write(tmp_path, 0, [[0, 1, "r", 0, 1]], "dc1", 1.0)
    write(tmp_path, 1, [[0, 2, "r", 1, 1]], "dc1", 2.0)
    # The job stopped before batch 1 was committed; started in dc2, it writes batch 1 again, then 2.
    write(tmp_path, 1, [[0, 2, "r", 1, 1]], "dc2", 3.0)
    write(tmp_path, 2, [[0, 3, "r", 2, 1]], "dc2", 4.0)
    files, batches = read_sink(tmp_path)
    assert streamsink.judge(streamsink.rows_of(files), {(0, 0), (0, 1), (0, 2)}, "r")["duplicated_offsets"] == 0
    resumed = streamsink.resumed(files, batches, "dc2")
    assert resumed["first_batch"] == 1
    assert resumed["joins"] == {0: (1, 2)}
    assert resumed["gaps"] == []


def test_a_job_that_did_not_resume_from_the_checkpoint_is_caught(tmp_path):
    write(tmp_path, 0, [[0, 1, "r", 0, 1], [1, 7, "r", 0, 1]], "dc1", 1.0)
    write(tmp_path, 1, [[0, 2, "r", 1, 1], [1, 8, "r", 1, 1]], "dc1", 2.0)
    # Started over from the earliest offsets in partition 0, and skipping ahead in partition 1.
    write(tmp_path, 2, [[0, 0, "r", 0, 1], [1, 12, "r", 5, 1]], "dc2", 3.0)
    files, batches = read_sink(tmp_path)
    resumed = streamsink.resumed(files, batches, "dc2")
    assert resumed["joins"] == {0: (2, 0), 1: (8, 12)}
    assert resumed["gaps"] == [0, 1]
    assert streamsink.resumed(files, batches, "dc3") == {"first_batch": None, "joins": {}, "gaps": []}


def test_the_longest_stall_is_the_longest_time_without_a_batch_that_brought_records():
    batches = [
        {"batch": 0, "records": 5, "at": 12.0},
        {"batch": 1, "records": 0, "at": 14.0},
        {"batch": 2, "records": 3, "at": 31.0},
        {"batch": 3, "records": 3, "at": 33.0},
        {"batch": 4, "records": 3, "at": 90.0},
    ]
    assert streamsink.longest_stall(batches, 10.0, 40.0) == 19.0
    assert streamsink.longest_stall(batches, 10.0, 100.0) == 57.0
    assert streamsink.longest_stall([], 0.0, 5.0) == 5.0
