"""The WAN benchmark's model (testkit/bench/wanmodel.py) on hand-worked cases, and the request metrics it reads."""

import pytest

from testkit import traffic
from testkit.bench import wan, wanmodel


def test_the_leader_pays_one_round_trip_to_the_far_replicas_on_top_of_its_own_handling():
    assert wanmodel.leader_produce_ms(30, 1.5) == 31.5
    assert wanmodel.leader_produce_ms(0, 1.5) == 1.5


def test_a_producer_in_the_other_dc_finds_the_fetch_answered_once_the_round_trip_reaches_its_wait():
    assert wanmodel.late_fetch_ms(30, 100, remote=True) == 0.0
    assert wanmodel.late_fetch_ms(100, 100, remote=True) == 100.0
    assert wanmodel.late_fetch_ms(150, 100, remote=True) == 100.0
    assert wanmodel.late_fetch_ms(150, 100, remote=False) == 0.0


def test_a_busy_connection_makes_a_record_wait_up_to_a_turn_of_its_partitions():
    # 100 records/s on the partition: a record every 10 ms, always one waiting when the answer comes.
    assert wanmodel.window_ms(31.5, 5, 1) == 31.5
    assert wanmodel.producer_ms(31.5, 5, 1, 100) == {"p50": 31.5 / 2 + 31.5, "p99": 63.0}


def test_partitions_sharing_a_connection_take_turns():
    # librdkafka sends one partition per ProduceRequest and the broker serves one request per connection at a time.
    assert wanmodel.window_ms(31.5, 5, 2) == 63.0
    assert wanmodel.producer_ms(31.5, 5, 2, 100)["p99"] == 63.0 + 31.5


def test_a_linger_longer_than_the_turn_is_the_window():
    assert wanmodel.producer_ms(31.5, 40, 1, 100) == {"p50": 20 + 31.5, "p99": 40 + 31.5}


def test_a_record_that_comes_alone_waits_exactly_the_linger():
    # 2 records/s: 500 ms apart, each finds the connection idle and waits its linger before it leaves.
    assert wanmodel.producer_ms(31.5, 40, 1, 2) == {"p50": 71.5, "p99": 71.5}


def test_appends_come_every_turn_when_busy_and_every_record_when_quiet():
    assert wanmodel.append_gap_ms(31.5, 5, 1, 100) == 31.5
    assert wanmodel.append_gap_ms(31.5, 5, 2, 100) == 31.5  # two partitions take turns: an append per service
    assert wanmodel.append_gap_ms(31.5, 5, 1, 2) == 500.0


def test_a_far_follower_adds_one_way_and_the_wait_for_the_leaders_next_append():
    e2e = wanmodel.end_to_end_ms(producer_p50=47.0, rtt_ms=30, append_gap=40.0, leader_ms=31.5)
    assert e2e["leader_dc_leader"] == 47.0
    assert e2e["far_dc_leader"] == 62.0
    assert e2e["far_dc_follower"] == pytest.approx(62.0 + 8.5)


def test_at_a_steady_rate_following_costs_only_the_one_way():
    e2e = wanmodel.end_to_end_ms(producer_p50=47.0, rtt_ms=30, append_gap=31.5, leader_ms=31.5)
    assert e2e["far_dc_follower"] == e2e["far_dc_leader"]


def test_on_a_quiet_leader_the_follower_waits_at_most_its_fetch_wait():
    e2e = wanmodel.end_to_end_ms(producer_p50=0, rtt_ms=30, append_gap=5000.0, leader_ms=31.5, fetch_wait_ms=500)
    assert e2e["far_dc_follower"] - e2e["far_dc_leader"] == 500
    e2e = wanmodel.end_to_end_ms(producer_p50=0, rtt_ms=30, append_gap=5000.0, leader_ms=31.5, fetch_wait_ms=100)
    assert e2e["far_dc_follower"] - e2e["far_dc_leader"] == 100


def test_controller_failover_is_the_fetch_timeout_less_half_a_fetch_wait_plus_two_vote_rounds():
    assert wanmodel.controller_failover_ms(2000, 500, 40) == 2000 - 250 + 80


def test_lag_is_the_rate_times_the_latency():
    assert wanmodel.lag_records(1000, 62.0) == 62.0


def test_a_ratio_needs_both_sides():
    assert wanmodel.ratio(45, 50) == 0.9
    assert wanmodel.ratio(None, 50) is None
    assert wanmodel.ratio(45, 0) is None


EXPORTER = """\
# HELP kafka_network_request_time_count_total x
kafka_network_request_time_count_total{part="TotalTimeMs",request="Produce",} 100.0
kafka_network_request_time_count_total{part="RemoteTimeMs",request="Produce",} 100.0
kafka_network_request_time_ms_mean{part="TotalTimeMs",request="Produce",} 40.0
kafka_network_request_time_ms_mean{part="RemoteTimeMs",request="Produce",} 30.0
kafka_server_isr_shrinks_total 2.0
kafka_raft_current_epoch 7.0
kafka_controller_fenced_brokers 0.0
"""


def test_request_times_read_counts_means_and_counters():
    found = traffic.request_times(EXPORTER)
    assert found["requests"][("Produce", "TotalTimeMs")] == (100.0, 40.0)
    assert found["counters"] == {"isr_shrinks": 2.0, "raft_epoch": 7.0, "fenced_brokers": 0.0}


def test_the_mean_between_two_reads_comes_from_the_sums():
    before = traffic.request_times(EXPORTER)
    after = traffic.request_times(
        EXPORTER.replace(" 100.0", " 300.0").replace("ms_mean{part=\"TotalTimeMs\",request=\"Produce\",} 40.0",
                                                     "ms_mean{part=\"TotalTimeMs\",request=\"Produce\",} 60.0")
    )  # fmt: skip
    # 100 requests at 40 ms, then 200 more: 300 x 60 - 100 x 40 = 14000 ms over 200 requests.
    assert traffic.mean_between(before, after, "Produce", "TotalTimeMs") == (200, 70.0)


def test_a_count_that_went_back_is_a_restart_not_a_mean():
    before = traffic.request_times(EXPORTER.replace(" 100.0", " 500.0"))
    with pytest.raises(ValueError, match="went back"):
        traffic.mean_between(before, traffic.request_times(EXPORTER), "Produce", "TotalTimeMs")


def broker(produce_ms, requests=100):
    return {"produce_requests": requests, "produce_ms": produce_ms}


def test_the_models_measured_input_is_the_calibration_runs_not_a_run_it_is_compared_with():
    calibration = {"brokers": {"101": broker(4.0), "102": broker(6.0), "201": broker(None, 0)}}
    assert wan.lan_produce_ms(calibration) == 5.0
    with pytest.raises(RuntimeError, match="calibration run at RTT 0"):
        wan.lan_produce_ms(None)  # a report with only the compared runs: no model, rather than one fitted to them


class Failovers:
    """A stand-in for the benchmark's controller kills: each one's figures in turn."""

    def __init__(self, *measured):
        self.measured = list(measured)

    def controller_failover(self, rtt):
        ms = self.measured.pop(0)
        return {"killed": f"dc{len(self.measured) + 1}-controller", "new_leader_after_ms": ms, "model_ms": 1830.0,
                "ratio": wanmodel.ratio(ms, 1830.0), "epochs": 1, "quorum_back": True}  # fmt: skip


def test_every_controller_kill_counts_and_a_failed_one_is_a_problem():
    found = wan.failovers(Failovers(1900, 2100, 2000), 30)
    assert (found["new_leader_after_ms"], found["failed_kills"], found["problems"]) == (2000, 0, [])
    found = wan.failovers(Failovers(1900, None, 2000), 30)
    assert found["new_leader_after_ms"] == 2000  # the failed kill counts as the slowest
    assert found["problems"] == ["controller failover at RTT 30 ms: 1 of 3 kills without a new leader measured or "
                                 "the quorum back (killed ['dc2-controller'])"]  # fmt: skip
    found = wan.failovers(Failovers(1900, None, None), 30)
    assert (found["new_leader_after_ms"], found["ratio"], found["failed_kills"]) == (None, None, 2)
