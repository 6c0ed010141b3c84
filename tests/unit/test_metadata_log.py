"""Kafka's record of when a lost DC stopped blocking writes, read from DumpLogSegments' text of the metadata log."""

from ansible_collections.stretch.kafka.plugins.module_utils.metadata_log import records, writable_again


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


def test_the_dc_is_writable_again_when_its_last_broker_is_fenced_after_it_went_silent():
    found = writable_again(records(DUMP), [201, 202], SILENT)
    assert found["problems"] == []
    assert found["fenced"] == {202: 1795765869.933, 201: 1795765869.933}
    assert found["at"] == 1795765869.933
    assert round(found["at"] - SILENT, 2) == 6.21


def test_a_fencing_before_the_dc_went_silent_does_not_count():
    # Broker 201's fencing at ...584 is from before the loss: without the batch at ...869 it is not known.
    found = writable_again(records(DUMP[:2]), [201], SILENT)
    assert found["at"] is None
    assert found["problems"] == [f"the metadata log holds no fencing of broker 201 since {SILENT:.3f}"]


def test_a_broker_never_fenced_leaves_the_end_unknown_naming_it():
    found = writable_again(records(DUMP), [201, 202, 203], SILENT)
    assert found["at"] is None
    assert "no fencing of broker 203" in found["problems"][0]


def test_an_unregistered_or_legacy_fenced_broker_counts_as_fenced():
    dump = [
        line(
            1, 1795765870000, '{"type":"UNREGISTER_BROKER_RECORD","version":0,"data":{"brokerId":201,"brokerEpoch":5}}'
        ),
        line(2, 1795765871000, '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":202,"epoch":7}}'),
    ]
    found = writable_again(records(dump), [201, 202], SILENT)
    assert found["fenced"] == {201: 1795765870.0, 202: 1795765871.0}
    assert found["at"] == 1795765871.0


def test_a_relaxed_min_isr_counts_only_as_the_cluster_wide_setting():
    relaxed = [*DUMP, min_isr(2900, 1795765880500, 2)]
    found = writable_again(records(relaxed), [201, 202], SILENT, min_isr_relaxed=True)
    assert found["min_isr_at"] == 1795765880.5
    assert found["at"] == 1795765880.5
    # A topic's own min ISR is not the cluster's: relaxed, but never written cluster-wide, is not known.
    found = writable_again(records(DUMP), [201, 202], SILENT, min_isr_relaxed=True)
    assert found["at"] is None
    assert found["problems"] == [
        f"the metadata log holds no cluster-wide min.insync.replicas written since {SILENT:.3f}"
    ]


def test_a_setting_written_without_a_relax_in_this_run_does_not_move_the_end():
    relaxed = [*DUMP, min_isr(2900, 1795765880500, 2)]
    assert writable_again(records(relaxed), [201, 202], SILENT)["at"] == 1795765869.933


def test_only_the_named_records_are_parsed_and_nothing_of_a_credential_comes_out():
    parsed = records(DUMP)
    assert {kind for _, _, kind, _ in parsed} == {"BROKER_REGISTRATION_CHANGE_RECORD", "CONFIG_RECORD"}
    assert "a2V5" not in repr(writable_again(parsed, [201, 202], SILENT))


def test_a_dc_without_brokers_or_an_unreadable_dump_is_never_a_time():
    assert writable_again(records(DUMP), [], SILENT)["at"] is None
    assert writable_again(records(["Exception in thread main", "| offset: x"]), [201], SILENT)["at"] is None
