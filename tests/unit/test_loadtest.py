"""The load harness's verifier: lost, reordered and duplicated records, stalls and latency."""

import pytest

from testkit.loadtest import harness, verify
from testkit.loadtest.traffic import leader_local


def acks(n, partitions=2, start=0.0, step=0.1):
    """n acknowledged records, round robin over partitions, each acknowledged 20 ms after it was sent."""
    out = []
    for i in range(n):
        sent = start + i * step
        out.append((i % partitions, i // partitions, i // partitions, sent, sent + 0.02))
    return out


def reads_of(acknowledged):
    return [(p, o, s) for p, o, s, _, _ in acknowledged]


def test_values_round_trip_and_foreign_records_are_ignored():
    value = verify.encode("run1", 3, 42, 64)
    assert len(value) == 64
    assert verify.decode(value) == ("run1", 3, 42)
    assert verify.decode(b"something else") is None


def test_a_clean_run_is_ok():
    a = acks(100)
    report = verify.judge(a, [], {"dc1": reads_of(a), "dc2": reads_of(a)}, 0.0, 10.0, sent=len(a))
    assert report["ok"]
    assert report["lost"] == 0
    assert report["latency_p99_ms"] == 20.0
    assert report["longest_stall_seconds"] == 0.1  # the steady gap between acknowledgements


def test_an_acknowledged_record_missing_from_one_dc_is_lost():
    a = acks(100)
    report = verify.judge(a, [], {"dc1": reads_of(a), "dc2": reads_of(a)[:-1]}, 0.0, 10.0, sent=len(a))
    assert not report["ok"]
    assert report["dcs"]["dc2"]["lost"] == 1
    assert report["dcs"]["dc2"]["lost_examples"] == ["1@49"]
    assert report["lost"] == 1


def test_a_record_at_an_acknowledged_offset_with_another_sequence_is_lost_too():
    a = acks(4)
    read = reads_of(a)
    read[0] = (0, 0, 99)
    assert verify.judge(a, [], {"dc1": read}, 0.0, 1.0, sent=len(a))["lost"] == 1


def test_reordering_within_a_partition_is_counted():
    a = acks(6, partitions=1)
    read = reads_of(a)
    read[2], read[3] = (0, 2, 3), (0, 3, 2)  # sequences swapped between offsets
    report = verify.judge(a, [], {"dc1": read}, 0.0, 1.0, sent=len(a))
    assert report["reordered"] == 1
    assert report["dcs"]["dc1"]["reordered_examples"] == ["0@3 seq 2 after 3"]
    assert not report["ok"]


def test_a_record_written_twice_is_a_duplicate_not_a_reordering():
    # The producer's retry after an epoch bump: the first copy (offset 2) was
    # never acknowledged, the second (offset 3) was.
    a = [(0, 0, 0, 0.0, 0.1), (0, 1, 1, 0.1, 0.2), (0, 3, 2, 0.2, 0.5), (0, 4, 3, 0.3, 0.6)]
    read = [(0, 0, 0), (0, 1, 1), (0, 2, 2), (0, 3, 2), (0, 4, 3)]
    report = verify.judge(a, [], {"dc1": read}, 0.0, 1.0, sent=len(a))
    assert report["duplicates"] == 1
    assert report["dcs"]["dc1"]["duplicate_examples"] == ["0@3 seq 2"]
    assert report["reordered"] == 0
    assert report["ok"]


def test_the_longest_stall_and_the_errors_are_reported():
    a = acks(10, step=0.1) + [(0, 99, 99, 1.0, 5.0)]
    report = verify.judge(a, [(7, "_MSG_TIMED_OUT")], {"dc1": reads_of(a)}, 0.0, 5.5, sent=len(a) + 1, warmup=0)
    assert report["longest_stall_seconds"] == 4.08
    assert report["latency_max_ms"] == 4000.0
    assert report["produce_errors"] == 1
    assert report["produce_error_kinds"] == ["_MSG_TIMED_OUT"]


def test_a_run_that_read_nothing_is_not_ok():
    assert not verify.judge(acks(3), [], {}, 0.0, 1.0, sent=3)["ok"]


def test_marked_windows_show_when_each_partition_was_acknowledged_again_and_where_each_dc_read():
    # Partition 1 stalls from t=2 to t=5 (its leader's DC was lost), partition 0 does not.
    a = [(0, i, i, i * 0.5, i * 0.5 + 0.01) for i in range(20)]
    a += [(1, i, i, t, t + 0.01) for i, t in enumerate([0.5, 1.0, 1.5, 5.5, 6.0, 6.5])]
    reads = {"dc1": [(p, o, s, t + 0.1) for p, o, s, _, t in a], "dc2": [(p, o, s, 9.0) for p, o, s, _, _ in a]}
    fetched = {
        "dc1": [
            (0.0, {(0, 101): 0, (1, 101): 0}),
            (4.0, {(0, 101): 3000, (1, 101): 1000}),
            (10.0, {(0, 101): 6000, (1, 101): 3000, (1, 201): 1000}),
        ],
        "dc2": [(0.0, {}), (4.0, {}), (10.0, {(0, 201): 500})],
    }
    out = verify.windows(
        [("steady", 0.0), ("dc2-lost", 2.0), ("healed", 8.0)], a, reads, fetched, {101: "dc1", 201: "dc2"}, 10.0
    )
    lost = out[1]
    assert lost["name"] == "dc2-lost"
    assert lost["first_ack_seconds"] == 0.01
    assert lost["every_partition_acked_seconds"] == 3.51
    assert lost["dcs"]["dc1"]["read"] == lost["acknowledged"]
    assert lost["dcs"]["dc2"]["read"] == 0
    assert lost["dcs"]["dc1"]["own_dc_byte_share"] == 1.0
    assert lost["dcs"]["dc1"]["read_from_other_dcs"] == {}
    assert lost["dcs"]["dc2"]["own_dc_byte_share"] is None, "nothing fetched, no share"
    healed = out[2]["dcs"]["dc1"]
    assert healed["own_dc_byte_share"] == 0.8333  # 5000 of 6000
    assert healed["read_from_other_dcs"] == {"1@201": 1000}, "the partition and the broker it was read from"


def test_a_partitions_record_bytes_go_to_the_broker_it_is_fetched_from_at_each_report():
    fetched = harness.FetchedBytes("load")

    def report(*parts):
        partitions = {str(p): {"partition": p, "broker": b, "rxbytes": n} for p, b, n in parts}
        partitions["-1"] = {"partition": -1, "broker": -1, "rxbytes": 0}  # librdkafka's unassigned partition
        fetched.update({"topics": {"load": {"partitions": partitions}, "other": {"partitions": {
            "0": {"partition": 0, "broker": 201, "rxbytes": 99999}}}}})  # fmt: skip

    report((0, 101, 1000), (1, 201, 500))
    report((0, 201, 1600), (1, -1, 900))  # partition 1 between brokers: its growth waits for the next report
    report((0, 201, 1600), (1, 101, 1200))
    assert fetched.counts == {(0, 101): 1000, (0, 201): 600, (1, 201): 500, (1, 101): 700}
    assert fetched.by_broker() == {101: 1700, 201: 1100}
    report((0, 201, 100), (1, 101, 1200))  # librdkafka started partition 0's count again: nothing is taken off
    report((0, 201, 400), (1, 101, 1200))
    assert fetched.counts[(0, 201)] == 900


def test_a_dcs_own_share_of_bytes_per_broker():
    racks = {101: "dc1", 201: "dc2"}
    assert verify.own_share({101: 800, 201: 200}, racks, "dc1") == 0.8
    assert verify.own_share({101: 0, 201: 0}, racks, "dc1") is None
    assert verify.own_share({301: 10}, racks, "dc1") == 0.0, "a broker of no known DC is not the reader's own"


def test_a_write_confirmed_without_an_offset_is_found_by_its_sequence():
    a = acks(6, partitions=1)
    a[3] = (0, None, 3, a[3][3], a[3][4])
    report = verify.judge(a, [], {"dc1": reads_of(acks(6, partitions=1))}, 0.0, 1.0, sent=len(a))
    assert report["acknowledged_without_offset"] == 1
    assert report["lost"] == 0
    missing = verify.judge(
        a, [], {"dc1": [r for r in reads_of(acks(6, partitions=1)) if r[2] != 3]}, 0.0, 1.0, sent=len(a)
    )
    assert missing["lost"] == 1
    assert missing["dcs"]["dc1"]["lost_examples"] == ["0@seq 3"]


def test_a_write_neither_confirmed_nor_failed_is_counted_and_fails_the_run():
    a = acks(10)
    report = verify.judge(a, [], {"dc1": reads_of(a)}, 0.0, 10.0, sent=12)
    assert (report["sent"], report["unconfirmed"]) == (12, 2)
    assert not report["ok"]


def test_a_produce_error_fails_the_run_even_with_nothing_lost():
    a = acks(10)
    report = verify.judge(a, [(10, "_MSG_TIMED_OUT")], {"dc1": reads_of(a)}, 0.0, 10.0, sent=11)
    assert report["lost"] == 0
    assert report["unconfirmed"] == 0
    assert report["produce_errors"] == 1
    assert not report["ok"]


def test_a_leader_local_producer_picks_the_partitions_led_from_its_dc():
    racks = {101: "dc1", 102: "dc1", 201: "dc2", 202: "dc2"}
    leaders = {0: 101, 1: 201, 2: 102, 3: 202, 4: -1}
    assert leader_local(leaders, racks, "dc1") == [0, 2]
    assert leader_local(leaders, racks, "dc2") == [1, 3]


def test_a_leader_local_producer_with_no_leader_in_its_dc_stops_with_a_message():
    with pytest.raises(SystemExit, match="no partition has its leader in dc1"):
        leader_local({0: 201}, {201: "dc2"}, "dc1")


def test_a_group_that_read_every_acknowledged_record_lost_nothing_and_counts_rereads_as_duplicates():
    acked = [(0, 0), (0, 1), (1, 0), (1, 1)]
    consumed = {"dc1-a": [(0, 0), (0, 1), (1, 0)], "dc2-a": [(1, 0), (1, 1)]}
    report = verify.judge_group(acked, consumed)
    assert (report["lost"], report["duplicates"], report["read"]) == (0, 1, 5)
    assert report["by_member"] == {"dc1-a": 3, "dc2-a": 2}


def test_a_record_no_member_read_is_lost():
    report = verify.judge_group([(0, 0), (0, 1), (1, 7)], {"dc1-a": [(0, 0)], "dc2-a": [(0, 1)]})
    assert report["lost"] == 1
    assert report["lost_examples"] == ["1 seq 7"]


def events(*items):
    return [{"t": t, "event": kind, "partitions": parts} for t, kind, parts in items]


GROUP = {
    "dc1-a": events((1.0, "assigned", [0, 1])),
    "dc2-a": events((1.0, "assigned", [2, 3])),
}


def test_the_takeover_is_when_the_survivors_own_every_partition_the_dead_members_had():
    group = dict(
        GROUP, **{"dc1-a": events((1.0, "assigned", [0, 1]), (60.0, "assigned", [2]), (62.5, "assigned", [3]))}
    )
    assert verify.takeover(group, ["dc2-a"], 20.0) == {"partitions": [2, 3], "seconds": 42.5}


def test_a_takeover_that_never_completes_has_no_time():
    group = dict(GROUP, **{"dc1-a": events((1.0, "assigned", [0, 1]), (60.0, "assigned", [2]))})
    assert verify.takeover(group, ["dc2-a"], 20.0) == {"partitions": [2, 3], "seconds": None}


def test_a_takeover_of_nothing_has_no_time_and_says_why():
    """The members killed owned nothing (not assigned yet, or none killed): no takeover happened, none passes."""
    unassigned = dict(GROUP, **{"dc2-a": events((30.0, "assigned", [2, 3]))})
    for group, dead in ((unassigned, ["dc2-a"]), (GROUP, [])):
        found = verify.takeover(group, dead, 20.0)
        assert (found["partitions"], found["seconds"]) == ([], None)
        assert found["why"] == f"the members killed ({dead}) owned no partition then: nothing was taken over"


def test_revoked_and_lost_partitions_leave_a_members_ownership():
    timeline = verify.owned_over_time(events((1.0, "assigned", [0, 1, 2]), (5.0, "revoked", [2]), (9.0, "lost", [0])))
    assert verify.owned_at(timeline, 0.5) == frozenset()
    assert verify.owned_at(timeline, 6.0) == frozenset({0, 1})
    assert verify.owned_at(timeline, 10.0) == frozenset({1})


def test_the_verdict_needs_what_was_sent_so_an_unanswered_write_cannot_vanish():
    # Without it, the writes never answered would be counted from the answers:
    # unconfirmed would be 0 by construction.
    a = acks(10)
    with pytest.raises(TypeError):
        verify.judge(a, [], {"dc1": reads_of(a)}, 0.0, 10.0)


def test_every_write_is_one_outcome_and_more_outcomes_than_writes_fail_the_run():
    a = acks(10)
    report = verify.judge(a, [(10, "_MSG_TIMED_OUT")], {"dc1": reads_of(a)}, 0.0, 10.0, sent=13)
    assert report["outcomes"] == {"acknowledged": 10, "failed": 1, "unconfirmed": 2}
    assert sum(report["outcomes"].values()) == report["sent"]
    over = verify.judge(a, [], {"dc1": reads_of(a)}, 0.0, 10.0, sent=9)
    assert over["unconfirmed"] == 0
    assert over["accounting_error"] == "10 outcomes for 9 writes"
    assert not over["ok"]


def test_the_producers_warm_up_is_kept_apart_from_its_latency():
    # The first record waits 900 ms for metadata and the producer id; the rest take 20 ms.
    a = acks(100)
    partition, offset, seq, sent, _ = a[0]
    a[0] = (partition, offset, seq, sent, sent + 0.9)
    report = verify.judge(a, [], {"dc1": reads_of(a)}, 0.0, 10.0, sent=len(a))
    assert report["latency_max_ms"] == 20.0
    assert report["warmup_latency_p99_ms"] == 900.0
    assert report["first_ack_seconds"] == 0.12  # the second record, sent at 0.1 s, was acknowledged first
    everything = verify.judge(a, [], {"dc1": reads_of(a)}, 0.0, 10.0, sent=len(a), warmup=0)
    assert everything["latency_max_ms"] == 900.0


def test_the_load_producer_retries_a_lost_leader_every_second_at_most_and_the_callers_settings_win():
    from testkit.loadtest.harness import LoadProducer

    producer = LoadProducer({"bootstrap.servers": "b1:9092"}, "load", [0, 1], "run", 200, 10, 100)
    # librdkafka's 10 s ceiling would leave a producer asking for a lost DC's new leaders up to 10 s late.
    assert producer.config["reconnect.backoff.max.ms"] == 1000
    assert producer.config["acks"] == "all"
    # Five in flight would leave a lost leader's requests to be resent one request each, in turn, at the new leader.
    assert producer.config["max.in.flight.requests.per.connection"] == 1
    assert producer.config["delivery.timeout.ms"] == 300000
    mine = LoadProducer({"reconnect.backoff.max.ms": 500}, "load", [0], "run", 200, 10, 100)
    assert mine.config["reconnect.backoff.max.ms"] == 500


def full(leader, replicas=(101, 102, 201, 202)):
    return {"leader": leader, "isr": list(replicas), "replicas": list(replicas)}


def test_a_read_from_another_dcs_follower_is_the_clients_and_from_its_leader_is_kafkas():
    home = {0: full(201), 3: full(202)}
    assert verify.misrouted_reads({}, [home, home]) == []
    assert verify.misrouted_reads({"3@101": 64000}, [home, home]) == [], "a follower in dc1 the client kept"
    led_away = {0: full(201), 3: full(101)}
    assert verify.misrouted_reads({"3@101": 64000}, [home, led_away]) == [
        "partition 3 read from its leader 101, in another DC"
    ], "led from dc1 as the window closed"
    short = {0: full(201), 3: {"leader": 202, "isr": [101, 102, 202], "replicas": [101, 102, 201, 202]}}
    assert verify.misrouted_reads({"3@101": 64000}, [short, home]) == ["ISR not full for partition(s) [3]"]


def test_reads_that_cannot_be_judged_are_problems():
    home = {3: full(202)}
    assert verify.misrouted_reads(None, [home]) == ["the reader's fetches were not counted"]
    assert verify.misrouted_reads({}, [home, {}]) == ["the topic's partitions could not be read"]
    assert verify.misrouted_reads({}, []) == ["the topic's partitions could not be read"]
    assert verify.misrouted_reads({"9@101": 1}, [home]) == ["partition 9 is not in the topic"]
    assert verify.misrouted_reads({"x@101": 1}, [home]) == ["x@101: not partition@broker"]
