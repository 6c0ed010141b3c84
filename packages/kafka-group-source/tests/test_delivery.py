"""The delivery contract's verdicts on sinks and member events: duplicates, handovers, takeover, calm."""

from kafka_group_source import delivery


def row(p, o):
    return ("load", p, o, 10)


def test_duplicates_are_counted_by_topic_partition_and_offset_over_every_dc():
    found = delivery.duplicates({"dc1": [row(0, 0), row(0, 1)], "dc2": [row(0, 1), row(1, 0)]})
    assert found == {"records": 4, "distinct": 3, "duplicates": 1, "duplicates_by_partition": {"load:0": 1}}


def test_takeover_is_the_first_batch_holding_a_partition_of_the_stopped_job():
    batches = [
        {"at": 99.0, "ranges": {"load:1": [0, 1]}},
        {"at": 103.0, "ranges": {"load:0": [0, 1]}},
        {"at": 108.5, "ranges": {"load:4": [0, 1], "load:5": [0, 1]}},
        {"at": 111.0, "ranges": {"load:6": [0, 1]}},
    ]
    found = delivery.takeover(batches, {"load:4", "load:5", "load:6"}, stopped_at=100.0)
    assert found["first_seconds"] == 8.5
    assert found["all_seconds"] == 11.0
    assert not found["not_taken"]
    assert delivery.takeover(batches, {"load:7"}, 100.0)["first_seconds"] is None


def test_calm_means_no_assignment_change_in_the_window():
    events = [
        {"at": 1, "event": "assigned", "owned": ["load:0"], "partitions": {"load:0": 0}},
        {"at": 5, "event": "committed"},
        {"at": 9, "event": "revoked", "owned": [], "partitions": ["load:0"]},
    ]
    assert delivery.changes_between(events, 2, 8) == []
    assert len(delivery.changes_between(events, 2, 10)) == 1
    timeline = delivery.owned_over_time(events)
    assert delivery.owned_at(timeline, 4) == {"load:0"}
    assert delivery.owned_at(timeline, 10) == frozenset()


def test_duplicates_are_bounded_by_one_batch_per_handover():
    events = {
        "dc1": [{"at": 1, "event": "assigned", "partitions": {"load:0": 0}},
                {"at": 20, "event": "assigned", "partitions": {"load:0": 10}}],
        "dc2": [{"at": 10, "event": "assigned", "partitions": {"load:0": 5}}],
    }  # fmt: skip
    moves = delivery.handovers(events)
    assert moves == {"load:0": [{"at": 10, "dc": "dc2", "start": 5}, {"at": 20, "dc": "dc1", "start": 10}]}
    batches = {
        "dc1": [{"at": 2, "ranges": {"load:0": [0, 4]}}, {"at": 3, "ranges": {"load:0": [5, 9]}}],
        "dc2": [{"at": 11, "ranges": {"load:0": [5, 12]}}],
    }
    bound = delivery.duplicate_bound({"load:0": 13}, moves, batches)["load:0"]
    assert bound == {"duplicates": 13, "handovers": 2, "batches_before": [5, 8], "bound": 13, "within": True}
    assert not delivery.duplicate_bound({"load:0": 14}, moves, batches)["load:0"]["within"]
    assert not delivery.duplicate_bound({"load:1": 1}, moves, batches)["load:1"]["within"]


def test_the_bound_is_the_batch_before_each_handover_not_the_largest_batch_ever():
    """dc1 catches up with one batch of 1000 records, then reads batches of 10; load:0 moves to dc2 at the
    group's committed offset 1010, the start of dc1's last batch [1010, 1019], which dc2 reads again: 10
    duplicates at most, not 1000."""
    events = {
        "dc1": [{"at": 1.0, "event": "assigned", "partitions": {"load:0": 0}}],
        "dc2": [{"at": 9.0, "event": "assigned", "partitions": {"load:0": 1010}}],
    }
    batches = {
        "dc1": [
            {"at": 2.0, "ranges": {"load:0": [0, 999]}},
            {"at": 4.0, "ranges": {"load:0": [1000, 1009]}},
            {"at": 9.5, "ranges": {"load:0": [1010, 1019]}},  # in flight when the partition moved
        ],
        "dc2": [{"at": 10.0, "ranges": {"load:0": [1010, 1030]}}],  # the new owner's own batch: not the bound
    }
    moves = delivery.handovers(events)
    assert delivery.duplicate_bound({"load:0": 10}, moves, batches)["load:0"]["within"]
    assert not delivery.duplicate_bound({"load:0": 500}, moves, batches)["load:0"]["within"]
