"""bench-wan's side-by-side producers: the bench topics' layout, the Java producer's output, kafka-python's metrics,
and the model."""

import pytest

from testkit.bench import clients, wanclient

PERF_TEST = """\
1001 records sent, 200.0 records/sec (0.04 MB/sec), 70.1 ms avg latency, 120.0 ms max latency.
4000 records sent, 199.9 records/sec (0.04 MB/sec), 64.50 ms avg latency, 101.00 ms max latency, 62 ms 50th, \
80 ms 95th, 93 ms 99th, 101 ms 99.9th.

Metric Name                                                                  Value
producer-metrics:record-queue-time-avg:{client-id=perf-producer-client}    : 8.25
producer-metrics:record-queue-time-max:{client-id=perf-producer-client}    : 31.0
producer-node-metrics:request-latency-avg:{client-id=perf-producer-client, node-id=node-101} : 31.4
producer-node-metrics:request-latency-avg:{node-id=node-102, client-id=perf-producer-client} : 32.6
producer-node-metrics:request-latency-max:{client-id=perf-producer-client, node-id=node-101} : NaN
producer-node-metrics:request-latency-avg:{client-id=perf-producer-client, node-id=node--1} : 3.0
"""


def test_each_leader_leads_its_share_with_two_replicas_in_each_dc():
    layout = clients.assignments([101, 102], [201, 202], 2)
    assert layout == {0: [101, 102, 201, 202], 1: [102, 101, 201, 202], 2: [101, 102, 201, 202],
                      3: [102, 101, 201, 202]}  # fmt: skip


def test_the_leader_local_topic_is_led_by_every_broker_two_replicas_in_each_dc():
    layout = clients.spread([101, 102], [201, 202], 2)
    assert [replicas[0] for replicas in layout.values()] == [101, 201, 102, 202, 101, 201, 102, 202]
    assert layout[1] == [201, 202, 101, 102]
    assert all(sorted(r) == [101, 102, 201, 202] and {r[0], r[1]} in ({101, 102}, {201, 202}) for r in layout.values())
    assert set(clients.topic_layouts([101, 102], [201, 202])) == {"bench-wan-p1", "bench-wan-p2", "bench-wan-p4",
                                                                   "bench-wan-ll-p2"}  # fmt: skip


@pytest.mark.parametrize(
    ("client", "per_leader", "place", "expected"),
    [("kafka-python", 2, "leader-local", True), ("java", 2, "leader-local", False),
     ("confluent-kafka", 4, "leader-local", False), ("spark-sink", 2, "local", True),
     ("spark-sink", 1, "remote", False), ("java", 4, "remote", True)],
)  # fmt: skip
def test_which_cases_are_measured(client, per_leader, place, expected):
    assert clients.measured(client, per_leader, place) is expected


def test_the_java_producers_steady_summary_and_metrics_are_read():
    found = clients.parse_perf_test(PERF_TEST)
    assert (found["records"], found["p50_ms"], found["p99_ms"]) == (4000, 62.0, 93.0)
    assert found["nodes"] == {"101": {"request_latency_avg": 31.4, "request_latency_max": None},
                              "102": {"request_latency_avg": 32.6}}  # fmt: skip
    assert (found["record_queue_time_avg"], found["record_queue_time_max"]) == (8.25, 31.0)


def test_kafka_pythons_queue_time_and_each_brokers_request_latency_are_read():
    metrics = {
        "producer-metrics": {"record-queue-time-avg": 0.0075, "record-queue-time-max": 0.04, "request-rate": 20.0},
        "producer-node-metrics.node-101": {"request-latency-avg": 33.125, "request-latency-max": 41.0},
        "producer-node-metrics.node-bootstrap-0": {"request-latency-avg": 2.0},
        "producer-node-metrics.node-102": {"request-rate": 3.0},
    }
    assert wanclient.kafka_python_figures(metrics) == {
        "record_queue_time_avg_ms": 7.5, "record_queue_time_max_ms": 40.0,
        "nodes": {"101": {"request_latency_avg": 33.12, "request_latency_max": 41.0}, "102": {}},
    }  # fmt: skip


def test_output_without_a_summary_is_an_error():
    with pytest.raises(RuntimeError, match="printed no summary"):
        clients.parse_perf_test("ERROR: something")


def case(client, place="local", per_leader=2, rtt=30, rate=200):
    return {"client": client, "leader_dc": place, "partitions_per_leader": per_leader, "rtt_ms": rtt, "rate": rate,
            "leaders": 2}  # fmt: skip


def test_librdkafkas_partitions_take_turns_on_a_connection_and_the_others_do_not():
    one = clients.model(case("confluent-kafka"), lan_produce_ms=2)
    own = clients.model(case("per-partition"), lan_produce_ms=2)
    java = clients.model(case("java"), lan_produce_ms=2)
    kafka_python = clients.model(case("kafka-python"), lan_produce_ms=2)
    # Two partitions take turns: the window is two of the leader's 32 ms Produce times.
    assert one == {"p50": 32 + 32, "p99": 64 + 32}
    assert own == java == kafka_python == {"p50": 16 + 32, "p99": 32 + 32}


def test_a_producer_in_the_other_dc_pays_the_round_trip_to_the_leader_too():
    assert clients.model(case("per-partition", place="remote"), lan_produce_ms=2) == {"p50": 31 + 62, "p99": 62 + 62}


def test_from_the_other_dc_at_a_round_trip_of_the_fetch_wait_the_append_waits_for_the_next_fetch():
    far = clients.model(case("kafka-python", place="remote", rtt=100), lan_produce_ms=2, fetch_wait_ms=100)
    near = clients.model(case("kafka-python", rtt=100), lan_produce_ms=2, fetch_wait_ms=100)
    # The leader: one round trip, its own 2 ms, and the fetch wait; then the round trip to the leader.
    assert far == {"p50": (100 + 2 + 100 + 100) * 1.5, "p99": (100 + 2 + 100 + 100) * 2}
    assert near == {"p50": 102 * 1.5, "p99": 102 * 2}


def test_no_lan_figure_no_model_and_none_for_the_spark_sinks_append_times():
    assert clients.model(case("java"), lan_produce_ms=None) is None
    assert clients.model(case("spark-sink"), lan_produce_ms=2) is None
