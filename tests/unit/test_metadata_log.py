"""Kafka's record of a lost DC's outage, read from DumpLogSegments' text of the metadata log within a bound."""

import struct
import sys

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.metadata_log import (
    BoundReached,
    batch_starts,
    decode,
    indexed_start,
    outage,
    read,
    records,
    summary,
    tail,
    walk_from_index,
    writable_again,
)


def line(offset, ms, payload):
    return (f"| offset: {offset} CreateTime: {ms} keySize: -1 valueSize: 19 sequence: -1 headerKeys: [] "
            f"payload: {payload}")  # fmt: skip


def fence(offset, ms, broker, fenced=1):
    data = f'{{"brokerId":{broker},"brokerEpoch":60,"fenced":{fenced}}}'
    return line(offset, ms, f'{{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{data}}}')


def min_isr(offset, ms, value, resource_type=4, name=""):
    data = f'{{"resourceType":{resource_type},"resourceName":"{name}","name":"min.insync.replicas","value":"{value}"}}'
    return line(offset, ms, f'{{"type":"CONFIG_RECORD","version":0,"data":{data}}}')


BATCH = ("baseOffset: 2786 lastOffset: 2836 count: 51 baseSequence: -1 lastSequence: -1 producerId: -1 "
         "producerEpoch: -1 partitionLeaderEpoch: 5 isTransactional: false isControl: false position: 1 "
         "CreateTime: 1795765869933 size: 2000 magic: 2 compresscodec: none crc: 1 isvalid: true")  # fmt: skip
# What the dump holds around a DC's loss: an older fencing, the two brokers fenced in one batch with the
# partitions' ISR changes, a topic's own min ISR, and a SCRAM credential that must never come out.
DUMP = [
    fence(60, 1795764584000, 201),
    fence(69, 1795764584278, 201, fenced=-1),
    BATCH,
    fence(2786, 1795765869933, 202),
    line(
        2834,
        1795765869933,
        '{"type":"PARTITION_CHANGE_RECORD","version":2,"data":{"partitionId":6,'
        '"topicId":"LskX7ucnQeGuHZcNkYQK0g","isr":[102,101]}}',
    ),  # fmt: skip
    fence(2836, 1795765869933, 201),
    min_isr(2840, 1795765875000, 3, resource_type=2, name="load"),
    line(
        2850,
        1795765876000,
        '{"type":"USER_SCRAM_CREDENTIAL_RECORD","version":0,"data":{"name":"kafka-verify",'
        '"mechanism":2,"salt":"c2FsdA==","storedKey":"a2V5"}}',
    ),  # fmt: skip
]
SILENT = 1795765863.72


def test_the_dc_is_writable_again_when_its_last_broker_is_fenced():
    found = writable_again(records(DUMP), [201, 202])
    assert found["problems"] == []
    assert found["fenced"] == {202: 1795765869.933, 201: 1795765869.933}
    assert found["at"] == 1795765869.933
    assert outage(found, lost_since=SILENT)["writable_after"] == 6.21


def test_a_fencing_the_broker_came_back_from_does_not_count():
    # Broker 201's fencing at ...584 was followed by its unfencing: without the batch at ...869 it is alive.
    found = writable_again(records(DUMP[:2]), [201])
    assert found["at"] is None
    assert found["problems"] == ["the newest record of broker 201, at 1795764584.278, has it alive"]


def test_a_broker_never_fenced_leaves_the_end_unknown_naming_it():
    found = writable_again(records(DUMP), [201, 202, 203])
    assert found["at"] is None
    assert found["problems"] == ["the metadata log holds no fencing of broker 203"]


def test_an_unregistered_or_legacy_fenced_broker_counts_as_fenced():
    dump = [
        line(
            1, 1795765870000, '{"type":"UNREGISTER_BROKER_RECORD","version":0,"data":{"brokerId":201,"brokerEpoch":5}}'
        ),
        line(2, 1795765871000, '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":202,"epoch":7}}'),
    ]
    found = writable_again(records(dump), [201, 202])
    assert found["fenced"] == {201: 1795765870.0, 202: 1795765871.0}
    assert found["at"] == 1795765871.0


# Kafka 4.3.1's own records, a controller and a broker on loopback: the broker registered and unfenced, stopped
# cleanly (SIGTERM at ...833.639: in controlled shutdown, fenced 0.27 s later, fenced again when its session
# expired), registered again, then SIGKILLed at ...859.705 (its last fetch from the quorum's leader ...859.630)
# and fenced 8.7 s later, when its session expired.
REAL = [
    line(41, 1795889818911, '{"type":"REGISTER_BROKER_RECORD","version":4,"data":{"brokerId":2,"brokerEpoch":41}}'),
    line(46, 1795889820609, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,'
                            '"brokerEpoch":41,"fenced":-1}}'),
    line(135, 1795889833673, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":1,"data":{"brokerId":2,'
                             '"brokerEpoch":41,"inControlledShutdown":1}}'),
    line(187, 1795889833904, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,'
                             '"brokerEpoch":41,"fenced":1}}'),
    line(207, 1795889843517, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,'
                             '"brokerEpoch":41,"fenced":1}}'),
    line(223, 1795889851480, '{"type":"REGISTER_BROKER_RECORD","version":4,"data":{"brokerId":2,"brokerEpoch":223}}'),
    line(232, 1795889854874, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,'
                             '"brokerEpoch":223,"fenced":-1}}'),
    line(362, 1795889868415, '{"type":"BROKER_REGISTRATION_CHANGE_RECORD","version":0,"data":{"brokerId":2,'
                             '"brokerEpoch":223,"fenced":1}}'),
]  # fmt: skip


def test_a_killed_broker_is_fenced_when_its_session_expires_and_a_clean_stop_at_once():
    killed = writable_again(records(REAL), [2])
    assert killed["fenced"] == {2: 1795889868.415}
    assert outage(killed, lost_since=1795889859.630)["writable_after"] == pytest.approx(8.785, abs=0.006)
    # Stopped cleanly: its first fencing counts, not the one written again when its session expired; it stopped
    # fetching after that, so writes never waited for it.
    stopped = writable_again(records(REAL[:5]), [2])
    assert stopped["fenced"] == {2: 1795889833.904}
    figure = outage(stopped, lost_since=1795889837.6)
    assert figure["writable_after"] == -3.7
    assert summary("dc2", stopped, figure, "c1").startswith(
        "acks=all writes did not wait for dc2: Kafka had fenced its brokers 3.7 s before the DC went silent"
    )


def test_a_relaxed_min_isr_counts_only_as_the_cluster_wide_setting():
    relaxed = [*DUMP, min_isr(2900, 1795765880500, 2)]
    found = writable_again(records(relaxed), [201, 202], min_isr_relaxed=True)
    assert found["min_isr_at"] == 1795765880.5
    assert found["at"] == 1795765880.5
    # A topic's own min ISR is not the cluster's: relaxed, but never written cluster-wide, is not known.
    found = writable_again(records(DUMP), [201, 202], min_isr_relaxed=True)
    assert found["at"] is None
    assert found["problems"] == ["the metadata log holds no cluster-wide min.insync.replicas written"]


def test_a_setting_written_without_a_relax_in_this_run_does_not_move_the_end():
    relaxed = [*DUMP, min_isr(2900, 1795765880500, 2)]
    assert writable_again(records(relaxed), [201, 202])["at"] == 1795765869.933


def test_only_the_named_records_are_parsed_and_nothing_of_a_credential_comes_out():
    parsed = records(DUMP)
    assert {kind for _, _, kind, _ in parsed} == {"BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD"}
    assert "a2V5" not in repr(writable_again(parsed, [201, 202]))


def test_a_dc_without_brokers_or_an_unreadable_dump_is_never_a_time():
    assert writable_again(records(DUMP), [])["at"] is None
    assert writable_again(records(["Exception in thread main", "| offset: x"]), [201])["at"] is None


# -- however late the run: no start from the quorum, the newest record of each broker ------------------------------
def test_a_late_run_finds_each_brokers_current_fencing_without_a_start():
    # The run comes more than 300 s after the loss: the quorum's leader no longer lists the brokers' fetches, so
    # there is no start to count from, and none is needed to find each broker's fencing: the first of the fencing
    # it is in now (201's older fencing, then unfencing, do not count).
    found = writable_again(records(DUMP), [201, 202])
    assert found["problems"] == []
    assert found["fenced"] == {201: 1795765869.933, 202: 1795765869.933}
    assert found["at"] == 1795765869.933


def test_a_broker_whose_newest_record_has_it_alive_is_not_taken_for_fenced():
    back = [*DUMP, line(2900, 1795765890000, '{"type":"REGISTER_BROKER_RECORD","version":3,"data":{"brokerId":202,'
                                            '"brokerEpoch":90,"fenced":true}}')]  # fmt: skip
    found = writable_again(records(back), [201, 202])
    assert found["at"] is None
    assert found["problems"] == ["the newest record of broker 202, at 1795765890.000, has it alive"]


def test_a_topics_own_relaxed_min_isr_counts_by_its_name():
    relaxed = [*DUMP, min_isr(2900, 1795765881000, 2, resource_type=2, name="strict"),
               min_isr(2901, 1795765881000, 2, resource_type=2, name="__transaction_state")]  # fmt: skip
    found = writable_again(records(relaxed), [201, 202], relaxed_topics=["strict", "__transaction_state"])
    assert found["relaxed_at"] == {"strict": 1795765881.0, "__transaction_state": 1795765881.0}
    assert found["at"] == 1795765881.0
    # The topic "load" had its own min ISR written at ...875, before: it is not one the run relaxed.
    found = writable_again(records(DUMP), [201, 202], relaxed_topics=["strict"])
    assert found["at"] is None
    assert found["problems"] == ["the metadata log holds no min.insync.replicas of topic strict written"]


def test_what_was_not_found_within_the_bound_says_so():
    found = writable_again(records(DUMP[3:]), [201, 202, 203], bound="the newest 4096 bytes of the metadata log")
    assert found["problems"] == [
        "the metadata log holds no fencing of broker 203 in the newest 4096 bytes of the metadata log"
    ]


# -- the outage's figure: Kafka's record, a bound of it, or none ---------------------------------------------------
def test_the_outage_is_exact_when_the_quorum_dates_the_start():
    found = writable_again(records(DUMP), [201, 202])
    figure = outage(found, lost_since=SILENT)
    assert (figure["exact"], figure["writable_after"], figure["writable_after_at_least"]) == (True, 6.21, None)
    assert summary("dc2", found, figure, "dc1-controller0").startswith(
        "Kafka fenced dc2's brokers and acks=all writes could resume 6.21 s after the DC went silent"
    )


def test_without_the_quorums_dates_the_fencing_only_bounds_the_start():
    found = writable_again(records([*DUMP, min_isr(2900, 1795765880500, 2)]), [201, 202], min_isr_relaxed=True)
    figure = outage(found)
    # The DC was down by its first fencing at ...869.933; writes could resume when the relaxed setting was written.
    assert figure == {"exact": False, "start": None, "start_by": 1795765869.933, "writable_after": None,
                      "writable_after_at_least": 10.57}  # fmt: skip
    # A fetch time the leader still lists for one broker, earlier than the fencing, bounds it closer.
    assert outage(found, lost_by=1795765863.72)["writable_after_at_least"] == 16.78
    assert summary("dc2", found, figure, "dc1-controller0").startswith(
        "Kafka fenced dc2's brokers and acks=all writes could resume at least 10.57 s after the DC went down. "
        "Kafka's record only bounds when it went down: by 1795765869.933"
    )


def test_without_kafkas_record_there_is_no_figure_and_the_line_says_why():
    found = writable_again(records(DUMP), [201, 202, 203])
    figure = outage(found, lost_by=1795765863.72)
    assert (figure["writable_after"], figure["writable_after_at_least"]) == (None, None)
    said = summary("dc2", found, figure, "dc1-controller0")
    assert (
        said == "Kafka's record of when writes could resume without dc2 is not known: the metadata log holds no "
        "fencing of broker 203"
    )
    assert not any(ch.isdigit() for ch in said.replace("203", "").replace("dc2", ""))


# -- the bound: the newest bytes, cut at a batch, in a given time ------------------------------------------------
def batch(offset, size=100):
    """A record batch of size bytes as a segment holds it: base offset, the length of the rest, then the rest
    (partition leader epoch, magic 2, and filler)."""
    return struct.pack(">qiib", offset, size - 12, 0, 2) + b"r" * (size - 17)


def segment(path, *sizes, tail_bytes=b"", index=()):
    """A segment of batches of the given sizes, and its offset index with the given (relative offset, position)."""
    path.write_bytes(b"".join(batch(i, s) for i, s in enumerate(sizes)) + tail_bytes)
    entries = b"".join(struct.pack(">ii", *entry) for entry in index)
    path.with_suffix(".index").write_bytes(entries + b"\0" * 64)
    return path


def test_the_batches_of_a_segment_are_found_from_their_headers_up_to_a_partial_one(tmp_path):
    seg = segment(tmp_path / "00000000000000000000.log", 22, 42, 17, tail_bytes=batch(3, 500)[:30])
    assert batch_starts(seg) == ([0, 22, 64], 81)
    zeros = segment(tmp_path / "00000000000000000003.log", 22, tail_bytes=b"\0" * 64)
    assert batch_starts(zeros) == ([0], 22)
    assert batch_starts(seg, start=22) == ([22, 64], 81)


def test_the_offset_index_lets_the_walk_start_near_the_cut(tmp_path):
    seg = segment(tmp_path / "00000000000000000000.log", *[100] * 10, index=[(0, 0), (4, 400), (8, 800)])
    assert indexed_start(str(seg), 650) == 400
    assert indexed_start(str(seg), 399) == 0
    assert indexed_start(str(seg), 5000) == 800
    assert indexed_start(str(tmp_path / "none.log"), 650) == 0
    # An index whose position is not a batch's first byte: the walk starts over from the segment's start.
    bad = segment(tmp_path / "00000000000000000010.log", *[100] * 10, index=[(0, 0), (4, 450)])
    assert walk_from_index(str(bad), 300) == ([p * 100 for p in range(10)], 1000)
    assert walk_from_index(str(seg), 300) == ([400, 500, 600, 700, 800, 900], 1000)


def test_the_newest_bytes_of_the_log_are_whole_segments_then_one_cut_at_a_batch(tmp_path):
    old = segment(tmp_path / "00000000000000000000.log", *[100] * 10)
    new = segment(tmp_path / "00000000000000000010.log", *[100] * 3)
    segments = [(str(old), 1000), (str(new), 300)]
    assert tail(segments, 5000) == ([(str(old), 0), (str(new), 0)], True)
    # 550 bytes: the newest segment whole, then the last 2 batches of the older one (250 would cut one in half).
    assert tail(segments, 550) == ([(str(old), 800), (str(new), 0)], False)
    assert tail(segments, 299) == ([(str(new), 100)], False)
    assert tail(segments, 99) == ([], False)


def test_a_read_within_the_bound_decodes_only_the_newest_bytes_and_says_what_it_left(tmp_path):
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    segment(partition / "00000000000000000000.log", *[100] * 10)
    segment(partition / "00000000000000000010.log", *[100] * 3)
    seen = {}

    def command(files):
        seen["files"] = [(f, open(f, "rb").read()[:12]) for f in files]  # noqa: SIM115
        return [sys.executable, "-c", "print(" + repr(DUMP[3]) + ")"]

    got = read(str(partition), 550, 30, command)
    assert got["problems"] == []
    assert (got["bytes"], got["complete"]) == (500, False)
    assert got["bound"] == "the newest 550 bytes of the metadata log (max_bytes)"
    # The older segment was cut at its ninth batch: a copy that starts there, gone once read.
    (copy, head), (whole, _) = seen["files"]
    assert struct.unpack(">qi", head) == (8, 88)  # the ninth batch's header
    assert whole == str(partition / "00000000000000000010.log")
    assert not any(tmp_path.rglob("metadata-log-*"))
    assert [r[2] for r in got["records"]] == ["BROKER_REGISTRATION_CHANGE_RECORD"]
    assert read(str(partition), 10_000, 30, command)["complete"] is True


def test_a_read_that_runs_past_its_time_is_stopped_and_says_so(tmp_path):
    partition = tmp_path / "__cluster_metadata-0"
    partition.mkdir()
    segment(partition / "00000000000000000000.log", 30)

    def slow(files):
        return [sys.executable, "-c", "import time; print('| offset: 1'); time.sleep(60)"]

    got = read(str(partition), 1000, 2, slow)
    assert got["records"] is None
    assert got["problems"] == ["the read of the metadata log was stopped at its bound: DumpLogSegments did not "
                               "end within 2 s (timeout)"]  # fmt: skip


def test_a_decoder_that_fails_or_a_log_with_no_segment_is_a_problem_not_an_empty_log(tmp_path):
    with pytest.raises(RuntimeError, match="exited 3: boom"):
        decode([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"], 10)
    with pytest.raises(BoundReached):
        decode([sys.executable, "-c", "import time; time.sleep(30)"], 1)
    assert read(str(tmp_path / "none"), 1000, 5, lambda files: ["true"])["problems"] == [
        f"no segment in {tmp_path / 'none'}"
    ]
