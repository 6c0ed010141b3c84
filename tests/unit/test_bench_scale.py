"""make bench-scale's own logic, from crafted inputs: the declared layout and its overlay, what a run's modules
sent, Kafka's log lines, the DC-loss stall split into phases, the recovery's model, the gates beside the catch-up,
and the verdict of a report."""

import contextlib
import datetime
import json
import math

import pytest
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.vars.manager import VariableManager

from testkit.bench import scale

KILLED = 1_000_000.0


def test_the_layout_cycles_through_realistic_topic_sizes_and_holds_exactly_the_partitions_asked():
    topics = scale.layout(100)
    assert [t["partitions"] for t in topics] == [6, 12, 3, 24, 6, 48, 1]
    assert scale.partitions_of(topics) == 100
    assert len(scale.layout(4000)) == 286
    grown = scale.grow_to(topics, 1000)
    assert grown[: len(topics)] == topics
    assert scale.partitions_of(grown) == 1000
    assert len({t["name"] for t in grown}) == len(grown), "a topic name taken twice"


def test_the_overlay_declares_the_topics_over_the_testbeds_inventory(tmp_path):
    declared = [{"name": "load", "partitions": 8}, *scale.layout(20)]
    directory = scale.overlay(tmp_path / "overlay", declared, {"kafka_node_nofile_limit": 20000})
    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[str(scale.LOCAL), str(directory)])
    variables = VariableManager(loader=loader, inventory=inventory)
    for host in ("dc1-broker1", "dc3-controller"):
        found = variables.get_vars(host=inventory.get_host(host))
        assert found["kafka_topics"] == declared, host
        assert found["kafka_node_nofile_limit"] == 20000, host


def test_the_testbeds_own_topics_and_offsets_partitions_are_read_from_its_inventory():
    assert {t["name"] for t in scale.base_topics()} >= {"load"}
    assert scale.internal_partitions() == 8


def test_the_admin_requests_of_a_run_are_summed_over_every_module_that_reported_them():
    tasks = [
        {"hosts": {"dc1-broker1": {"admin_requests": {"total": 5, "by_api": {"Metadata": 2, "ApiVersions": 3}}}}},
        {"hosts": {"dc1-broker1": {"changed": False}}},
        {"hosts": {"dc1-broker1": {"results": [{"admin_requests": {"total": 1, "by_api": {"Metadata": 1}}}]}}},
    ]
    assert scale.admin_requests(tasks) == {"total": 6, "by_api": {"ApiVersions": 3, "Metadata": 3}, "modules": 2}


LOG = """\
[2026-11-25 03:18:30,000] INFO [QuorumController id=1] Fencing broker 201 at epoch 41 because its session has timed out.
[2026-11-25 03:18:40,500] INFO [RaftManager id=1] Completed transition to Leader(localId=1, epoch=7) (x)
[2026-11-25 03:18:46,250] INFO [QuorumController id=1] Fencing broker 201 at epoch 41 because its session has timed out.
[2026-11-25 03:18:47,000] INFO [QuorumController id=1] Fencing broker 202 at epoch 42 because its session has timed out.
[2026-11-25 03:18:47,100] INFO [QuorumController id=1] Fencing broker 101 at epoch 41 because its session has timed out.
a line without a time
"""


def test_kafkas_log_lines_give_the_new_leaders_transition_and_each_lost_brokers_fencing_after_the_kill():
    since = scale.log_time("[2026-11-25 03:18:40,000]")
    assert since == datetime.datetime(2026, 11, 25, 3, 18, 40, tzinfo=datetime.UTC).timestamp()
    assert scale.leader_at(LOG, since) == pytest.approx(since + 0.5)
    assert scale.fenced_at(LOG, {201, 202}, since) == {201: since + 6.25, 202: since + 7.0}
    # Two controllers' logs, or a rolled file after the current one: the earliest fencing after the kill counts.
    later_first = "\n".join(reversed(LOG.splitlines()))
    assert scale.fenced_at(later_first, {201, 202}, since) == {201: since + 6.25, 202: since + 7.0}
    assert scale.leader_at(LOG, since + 1) is None
    assert scale.log_time("not a log line") is None


def test_a_client_knows_a_partitions_leader_once_its_metadata_names_a_live_one_after_the_kill():
    timeline = [(KILLED - 5, {0: 201, 1: 101}), (KILLED + 2, {0: 201, 1: 101}), (KILLED + 7, {0: -1, 1: 101}),
                (KILLED + 8, {0: 102, 1: 101})]  # fmt: skip
    assert scale.partitions_known(timeline, KILLED, {201, 202}) == {0: KILLED + 8, 1: KILLED + 2}
    acks = [(0, KILLED - 1, KILLED - 1.01), (1, KILLED + 0.5, KILLED + 0.4), (0, KILLED + 8.4, KILLED + 1),
            (0, KILLED + 9, KILLED + 8.9)]  # fmt: skip
    assert scale.first_acks(acks, KILLED) == {1: KILLED + 0.5, 0: KILLED + 8.4}
    # A record written before the kill and acknowledged after it (in flight) is not the stall's end.
    in_flight = [(0, KILLED + 0.2, KILLED - 0.05), (0, KILLED + 7.1, KILLED + 0.3)]
    assert scale.first_acks(in_flight, KILLED) == {0: KILLED + 7.1}


def test_a_stall_with_the_quorum_leader_elsewhere_is_split_from_the_kill_and_its_floor_is_the_session_timeout():
    stall = scale.stall_phases(
        KILLED, None, {201: KILLED + 5.5, 202: KILLED + 6.0}, KILLED + 6.2, {0: KILLED + 7.0, 1: KILLED + 6.5},
        {0: KILLED + 7.3, 1: KILLED + 0.1}, session_timeout=6.0, partitions=[0, 1],
    )  # fmt: skip
    assert stall["phases"] == {"quorum_election": 0.0, "wait_before_fencing": 6.0,
                               "partition_leader_elections": 0.2, "brokers_take_over": None,
                               "clients_discover_leaders": 0.8, "first_acknowledgement": 0.3}  # fmt: skip
    assert stall["stall_seconds"] == 7.3
    assert stall["first_ack_seconds"] == 0.1
    assert stall["floor_seconds"] == 6.0
    assert stall["over_floor_seconds"] == pytest.approx(1.3)
    assert stall["over_floor_split"] is None, "no take-over read: nobody knows whose the 1.3 s are"


STATE_CHANGES = """\
[2026-11-25 03:18:45,000] INFO [Broker id=101] Transitioning 3 partition(s) to local leaders.
[2026-11-25 03:18:46,200] INFO [Broker id=101] Transitioning 40 partition(s) to local leaders.
[2026-11-25 03:18:47,000] INFO [Broker id=101] Leader load-0 with topic id Some(x) starts at leader epoch 7
[2026-11-25 03:18:47,100] INFO [Broker id=101] Skipped the become-leader state change for load-1 with topic id Some(x)
[2026-11-25 03:18:47,200] INFO [Broker id=101] Leader load-2 with topic id Some(x) starts at leader epoch 3
[2026-11-25 03:18:49,000] INFO [Broker id=101] Transitioning 40 partition(s) to local followers.
[2026-11-25 03:18:49,500] INFO [Broker id=101] Started fetchers as part of become-follower for 12 partitions
[2026-11-25 03:18:52,000] INFO [Broker id=101] Started fetchers as part of become-follower for 1 partitions
"""


def test_a_survivors_take_over_runs_from_its_first_batch_after_the_fencing_to_its_last_followers_fetching():
    since = scale.log_time("[2026-11-25 03:18:46,000]")
    taken = scale.took_over({101: STATE_CHANGES, 102: STATE_CHANGES.splitlines()[0]}, since, since + 5.0)
    assert taken == {101: (since + 0.2, since + 3.5)}, "a batch before since is not the loss's; half a batch is unseen"
    # A second fencing's batch before the stall ended is the loss's too: its followers fetching end the take-over.
    assert scale.took_over({101: STATE_CHANGES}, since, since + 7.0) == {101: (since + 0.2, since + 6.0)}
    stall = scale.stall_phases(
        since - 6.0, None, {201: since}, since + 0.5, {0: since + 1.0}, {0: since + 4.0}, 6.0, [0], taken,
    )  # fmt: skip
    assert stall["phases"]["brokers_take_over"] == 3.0
    assert stall["phases"]["clients_discover_leaders"] == 0.5
    assert stall["phases"]["first_acknowledgement"] == 0.5, "counted from the later of the take-over and the client"
    assert stall["taking_over_seconds"] == {"101": [6.2, 9.5]}
    # 4.0 s over the 6 s floor: fenced on time, 3.5 s of Kafka's (fencing to take-over), 0.5 s the client's after.
    assert stall["over_floor_split"] == {"fencing": 0.0, "kafka": 3.5, "client": 0.5}
    assert sum(stall["over_floor_split"].values()) == pytest.approx(stall["over_floor_seconds"])
    # Each batch of leaderships, from since: when it began, how many, how long until its followers' part, and how
    # many of them at a leader epoch new to the broker (the rest kept theirs, their ISR changed).
    assert scale.leader_batches({101: STATE_CHANGES}, since, since + 7.0) == {"101": [[0.2, 40, 2.8, 2]]}
    # The watcher's moment can come last (its read ends late): the acknowledgement counts from it.
    late_watch = scale.stall_phases(since - 6.0, None, {201: since}, since + 5.0, {0: since + 1.0}, {0: since + 5.5},
                                    6.0, [0], taken)  # fmt: skip
    assert late_watch["phases"]["first_acknowledgement"] == 0.5


def test_with_the_quorum_leader_lost_the_election_comes_first_and_the_floor_holds_it():
    stall = scale.stall_phases(
        KILLED, KILLED + 2.4, {201: KILLED + 8.4}, KILLED + 8.5, {0: KILLED + 8.6}, {0: KILLED + 8.7},
        session_timeout=6.0, partitions=[0],
    )  # fmt: skip
    assert stall["phases"]["quorum_election"] == 2.4
    assert stall["phases"]["wait_before_fencing"] == 6.0
    assert stall["floor_seconds"] == 8.4
    assert stall["over_floor_seconds"] == pytest.approx(0.3)


def test_a_partition_never_written_again_leaves_the_stall_unmeasured_not_short():
    stall = scale.stall_phases(
        KILLED, None, {201: KILLED + 6}, KILLED + 6.1, {0: KILLED + 6.2, 1: KILLED + 6.3}, {0: KILLED + 6.4},
        session_timeout=6.0, partitions=[0, 1],
    )  # fmt: skip
    assert stall["stall_seconds"] is None
    assert stall["over_floor_seconds"] is None
    assert stall["phases"]["first_acknowledgement"] is None
    assert scale.stall_phases(KILLED, None, {}, None, {}, {}, 6.0, [0])["phases"]["wait_before_fencing"] is None


def test_the_recovery_model_copies_what_was_written_to_the_lost_dcs_replicas_at_the_throttle_on_the_fewer_side():
    before = {("load", 0): 1000, ("load", 1): 5000}
    after = {("load", 0): 61_000, ("load", 1): 5000, ("new", 0): 40_000}
    replicas = {("load", 0): [101, 102, 201, 202], ("load", 1): [201, 202, 101, 102], ("new", 0): [101, 201, 102, 202]}
    # 60,000 bytes written to load-0 and 40,000 to a partition created meanwhile, each twice in the lost DC.
    assert scale.bytes_to_copy(before, after, replicas, {201, 202}) == 200_000
    # 240 MB to copy, 1 MiB/s a broker, 2 senders and 2 receivers: at 2 MiB/s.
    assert scale.recovery_model(240e6, 2**20, 2, 2) == pytest.approx(240e6 / 2**21)
    assert scale.recovery_model(240e6, 2**20, 3, 2) == scale.recovery_model(240e6, 2**20, 2, 2)
    with pytest.raises(ValueError, match="positive rate"):
        scale.recovery_model(1, 0, 2, 2)
    # The load still writing 2**19 B/s to the lost replicas leaves 1.5 MiB/s of the throttle for the backlog.
    assert scale.recovery_model(240e6, 2**20, 2, 2, inflow=2**19) == pytest.approx(240e6 / (1.5 * 2**20))
    with pytest.raises(ValueError, match="never catch up"):
        scale.recovery_model(240e6, 2**20, 2, 2, inflow=2**21)


def snapshot(fenced=False, registered=True, isr=(101, 102, 201, 202)):
    brokers = {b: {"fenced": fenced and b == 201} for b in (101, 102, 201, 202) if registered or b != 201}
    return {"brokers": brokers, "partitions": [{"replicas": [101, 102, 201, 202], "isr": list(isr), "leader": 101}]}


def test_a_brokers_restart_is_read_from_the_watchers_polls_and_its_gate_judged_against_its_catch_up():
    other_short = {"replicas": [101, 102, 201, 202], "isr": [101, 201, 202], "leader": 101}
    polls = [(10.0, snapshot()), (11.0, snapshot(isr=(101, 102, 202))), (12.0, snapshot(registered=False)),
             (14.0, snapshot(isr=(101, 102, 202))), (17.5, snapshot()), (18.0, snapshot())]  # fmt: skip
    polls[4][1]["partitions"].append(other_short)  # another broker's replica out of an ISR when 201 caught up
    moments = scale.isr_moments(polls, 201)
    assert moments == {"left": 11.0, "registered": 14.0, "caught_up": 17.5, "whole": 18.0}
    restarts = [
        {"host": "dc2-broker1", "node_id": 201, "gate_before_seconds": 0.4, "gate_after_seconds": 4.2,
         "gate_passed_at": 19.0},
        {"host": "dc2-broker2", "node_id": 202, "gate_before_seconds": 0.4, "gate_after_seconds": 9.0,
         "gate_passed_at": 19.0},
    ]  # fmt: skip
    judged = scale.gates_beside_catch_up(restarts, {201: moments}, resolution=1.5)
    assert judged[0]["catch_up_seconds"] == 3.5
    assert judged[0]["whole_after_caught_up_seconds"] == 0.5
    assert judged[0]["passed_after_due_seconds"] == 1.0
    assert judged[0]["met"]
    assert judged[1]["catch_up_seconds"] is None
    assert not judged[1]["met"], "a broker whose catch-up nobody saw is not met"
    late = scale.gates_beside_catch_up([{**restarts[0], "gate_passed_at": 21.0}], {201: moments}, resolution=1.5)
    assert late[0]["passed_after_due_seconds"] == 3.0
    assert not late[0]["met"], "a gate that passed 3 s after its conditions held waited for something else"
    early = scale.gates_beside_catch_up([{**restarts[0], "gate_passed_at": 15.0}], {201: moments}, resolution=1.5)
    assert early[0]["passed_after_due_seconds"] == -3.0
    assert not early[0]["met"], "a gate that passed 3 s before the broker was back did not wait for it"
    unseen = scale.gates_beside_catch_up(restarts[:1], {201: {**moments, "whole": None}}, resolution=1.5)
    assert unseen[0]["passed_after_due_seconds"] is None
    assert not unseen[0]["met"], "a moment the watcher never saw is unknown, not met"
    # Started by the play after the broker was ready: due at its own first read, the play's time shown apart.
    after = {**restarts[0], "gate_started_at": 22.0, "gate_passed_at": 22.0}
    judged = scale.gates_beside_catch_up([after], {201: moments}, resolution=1.5)[0]
    assert (judged["started_after_ready_seconds"], judged["passed_after_due_seconds"]) == (4.0, 0.0)
    assert not judged["read_before_ready"], "met, but its waiting was not put to the test"
    assert judged["met"]
    slow = scale.gates_beside_catch_up([{**after, "gate_passed_at": 26.0}], {201: moments}, resolution=1.5)[0]
    assert not slow["met"], "a gate that started late and then polled 4 s more waited for something else"
    early_start = scale.gates_beside_catch_up([{**after, "gate_started_at": 15.0}], {201: moments}, resolution=1.5)
    assert not early_start[0]["met"], "started before ready, it is due at ready: 22 is 4 s after"
    assert early_start[0]["read_before_ready"]
    # The tolerance can follow the read that saw the broker ready: a slow read there widens it, only there.
    judged = scale.gates_beside_catch_up([{**after, "gate_passed_at": 26.0}], {201: moments},
                                         resolution=lambda ready: 1.5 + (4.0 if ready == 18.0 else 0.0))  # fmt: skip
    assert (judged[0]["resolution_seconds"], judged[0]["met"]) == (5.5, True)
    older = {k: v for k, v in restarts[0].items() if k != "gate_passed_at"}
    assert scale.gates_beside_catch_up([older], {201: moments}, resolution=1.5)[0]["met"]  # 4.2 <= 3.5 + 1.5
    assert scale.isr_moments([(1.0, snapshot())], 201) == {
        "left": None, "registered": None, "caught_up": None, "whole": None,
    }  # fmt: skip


def test_the_cluster_is_led_outside_the_lost_dc_once_no_dead_broker_leads_or_is_in_an_isr():
    parts = [{"leader": 101, "replicas": [101, 201], "isr": [101, 201]}]
    assert not scale.led_outside({"partitions": parts}, {201})
    parts[0]["isr"] = [101]
    assert scale.led_outside({"partitions": parts}, {201})
    assert not scale.led_outside({"partitions": []}, {201})
    assert scale.whole_isr({"partitions": [{"replicas": [1, 2], "isr": [2, 1]}]})
    assert scale.registered(snapshot(), [201])
    assert not scale.registered(snapshot(fenced=True), [201])


def test_the_quorum_is_caught_up_with_every_voter_voting_and_close_to_the_leader():
    voters = {1: "dc1", 2: "dc2", 3: "dc3"}
    assert scale.caught_up({"leader": 1, "voters": {1: 100, 2: 98, 3: 100}}, voters)
    assert not scale.caught_up({"leader": 1, "voters": {1: 100, 2: 90, 3: 100}}, voters)
    assert not scale.caught_up({"leader": -1, "voters": {1: 100, 2: 100, 3: 100}}, voters)
    assert not scale.caught_up({"leader": 1, "voters": {1: 100, 3: 100}}, voters)
    assert not scale.caught_up(None, voters)


def test_the_live_heap_is_the_class_histograms_total_and_the_exporters_reads_come_from_its_metrics():
    histogram = "  1:  5000  240000  [B (java.base@17)\nTotal        123456       98765432\n"
    assert scale.histogram_bytes(histogram) == 98765432
    with pytest.raises(ValueError, match="no Total line"):
        scale.histogram_bytes("nothing")
    metrics = """# HELP x
stretch_exporter_read_success{part="groups"} 1
stretch_exporter_read_duration_seconds{part="groups"} 0.25
stretch_exporter_last_read_timestamp_seconds{part="groups"} 1.7e+09
stretch_exporter_read_success{part="partitions"} 0
stretch_exporter_read_duration_seconds{part="partitions"} 3.5
stretch_partitions_under_min_isr{dc="dc1",topic="load"} 0
"""
    assert scale.exporter_reads(metrics) == {"groups": {"ok": 1.0, "seconds": 0.25, "at": 1.7e9},
                                             "partitions": {"ok": 0.0, "seconds": 3.5}}  # fmt: skip
    assert scale.heap_mib("-Xms1g -Xmx1g") == 1024
    assert scale.heap_mib("-Xmx384m") == 384


def test_a_cost_is_extrapolated_along_its_measured_log_log_slope():
    linear = [(100, 1.0), (1000, 10.0), (4000, 40.0)]
    assert scale.slope(linear) == pytest.approx(1.0)
    assert scale.extrapolate(linear) == {"slope": 1.0, "at": 50_000, "value": 500.0}
    assert scale.slope([(100, 2.0), (4000, 2.0)]) == pytest.approx(0.0)
    assert scale.extrapolate([(100, 1.0)]) is None


def test_the_first_limit_a_growing_cluster_reaches_is_where_the_busiest_broker_crosses_it():
    by_dc = {"dc1": [101, 102], "dc2": [201, 202]}
    reached = scale.first_reached(by_dc, lambda load: load["segments"] > 95000)
    # RF 4 on 2 + 2: every broker holds every partition and the 100 internal ones, 3 segments each.
    assert (reached + 100) * 3 > 95000 >= (reached - 1 + 100) * 3
    assert scale.first_reached(by_dc, lambda load: False) is None
    found = scale.limits({"heap_per_1000_replicas_mib": 50.0, "broker_heap_mib": 1024})
    assert set(found["2+2 brokers"]) == {"open files (kafka_node_nofile_limit 100000)",
                                         "memory maps (vm.max_map_count 262144)", "heap (1024 MiB)"}  # fmt: skip
    assert found["2+2 brokers"]["heap (1024 MiB)"] < found["2+2 brokers"]["open files (kafka_node_nofile_limit 100000)"]


def size(partitions, noop, status, stall_elsewhere, stall_lost, lost=0, gate=3.0, catch_up=3.0, catch=60.0, cpu=None):
    def loss(stall, floor):
        return {
            "load": {"lost": lost},
            "stall": {"stall_seconds": stall, "over_floor_seconds": round(stall - floor, 2)},
        }

    return {
        "partitions": partitions, "noop_converge_seconds": noop, "status_seconds": status,
        "noop_converge_cpu": {"controller_cpu_seconds": noop * 0.8 if cpu is None else cpu},
        "restart": {"load": {"lost": lost}, "gates": [{"host": "b", "gate_after_seconds": gate,
                                                       "catch_up_seconds": catch_up, "met": gate <= catch_up + 1.5}]},
        "exporter": {"scrape_seconds": 0.05, "reads": {"partitions": {"ok": 1.0, "seconds": 1.2}}},
        "dc_loss": {"leader_elsewhere": {**loss(stall_elsewhere, 6.0), "recovery": {"catch_up_seconds": catch,
                                                                                    "model_seconds": 57.2}},
                    "leader_in_lost_dc": loss(stall_lost, 8.4)},
    }  # fmt: skip


def test_the_verdict_holds_each_target_against_the_smallest_size_of_the_same_run():
    report = {"sizes": [size(4000, 140, 5.0, 6.4, 9.1), size(100, 100, 4.0, 6.2, 8.9)]}
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert all(c["met"] for c in checks.values()), [c for c in checks.values() if not c["met"]]
    assert checks["a no-op converge at 4000 over 100 partitions"]["value"] == 1.4
    report["sizes"][0] = size(4000, 160, 5.0, 7.5, 9.1, lost=2, catch=80.0, cpu=88.0)
    failed = {c["target"] for c in scale.verdict(report) if not c["met"]}
    assert failed == {
        "4000 partitions, rolling restart: acknowledged records lost",
        "4000 partitions, DC loss (leader_elsewhere): acknowledged records lost",
        "4000 partitions, DC loss (leader_in_lost_dc): acknowledged records lost",
        "a no-op converge at 4000 over 100 partitions",
        "DC-loss write stall (leader_elsewhere) at 4000 over 100 partitions, s",
        "4000 partitions, DC-loss stall (leader_elsewhere) over its floor, s",
        "4000 partitions, recovery against data / throttle (80.0 s, model 57.2 s)",
    }


def no_fsync(stall, floor, lost=0):
    return {"load": {"lost": lost}, "stall": {"stall_seconds": stall, "over_floor_seconds": round(stall - floor, 2)}}


def test_a_stall_target_not_met_holds_a_limit_only_when_without_fsync_it_met_it_and_its_control_did_not(
    tmp_path, capsys
):
    large = size(4000, 140, 5.0, 8.6, 12.1)
    report = {"sizes": [size(100, 100, 4.0, 6.2, 8.5), large], "problems": []}
    stalls = {"4000 partitions, DC-loss stall (leader_elsewhere) over its floor, s",
              "4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s",
              "DC-loss write stall (leader_elsewhere) at 4000 over 100 partitions, s",
              "DC-loss write stall (leader_in_lost_dc) at 4000 over 100 partitions, s"}  # fmt: skip
    # Without a run that skips fsync, the stall targets are simply not met.
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert {t for t, c in checks.items() if not c["met"]} == stalls
    assert not any(checks[t]["limit"] for t in stalls)
    # The same cases again without fsync, within the targets; but no control yet: nothing is proven.
    large["dc_loss_no_fsync"] = {"leader_elsewhere": no_fsync(6.7, 6.0), "leader_in_lost_dc": no_fsync(9.3, 8.4)}
    assert not any(c["limit"] for c in scale.verdict(report))
    # Their controls, after the same restart with fsync back, over the targets: the seconds over are the disk's.
    large["dc_loss_restarted"] = {"leader_elsewhere": no_fsync(8.5, 6.0), "leader_in_lost_dc": no_fsync(11.9, 8.4)}
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert {t for t, c in checks.items() if not c["met"]} == stalls
    assert checks["4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"]["limit"] == (
        "the disk's: after the same restart of the survivors, 0.9 s over the floor with their fsync skipped, "
        "3.5 s with it"
    )
    assert checks["DC-loss write stall (leader_elsewhere) at 4000 over 100 partitions, s"]["limit"] == (
        "the disk's: after the same restart of the survivors, 0.5 s grown with their fsync skipped, 2.3 s with it"
    )
    for what in ("the survivors' fsync skipped", "the survivors restarted, fsync on"):
        assert checks[f"4000 partitions, DC loss (leader_in_lost_dc, {what}): acknowledged records lost"]["met"]
    done = scale.finish(report, tmp_path / "r.json", tmp_path / "r.png")
    assert done["ok"]
    out = capsys.readouterr().out
    assert (
        "LIMIT    4000 partitions, DC-loss stall (leader_elsewhere) over its floor, s: 2.6 (target <= 1.0; "
        "limit proven, the disk's: after the same restart of the survivors, 0.7 s over the floor with their fsync "
        "skipped, 2.5 s with it)" in out
    )
    assert "| DC loss, leader elsewhere, fsync skipped: stall, s | - | 6.7 |" in out
    assert "| DC loss, leader elsewhere, restarted, fsync on: stall, s | - | 8.5 |" in out
    # A control within the target: the restart, not the disk, took the seconds off. Nothing is proven.
    large["dc_loss_restarted"]["leader_elsewhere"] = no_fsync(6.9, 6.0)
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks["4000 partitions, DC-loss stall (leader_elsewhere) over its floor, s"]["limit"]
    assert not checks["DC-loss write stall (leader_elsewhere) at 4000 over 100 partitions, s"]["limit"]
    assert checks["4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"]["limit"]
    # Without fsync still over: no limit, the targets not met.
    large["dc_loss_no_fsync"]["leader_in_lost_dc"] = no_fsync(9.6, 8.4)
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks["4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"]["limit"]
    assert not checks["DC-loss write stall (leader_in_lost_dc) at 4000 over 100 partitions, s"]["limit"]
    assert not scale.finish(report, tmp_path / "r.json", tmp_path / "r.png")["ok"]
    # A run without fsync that lost an acknowledged record proves nothing, and is itself a target not met.
    large["dc_loss_no_fsync"] = {"leader_in_lost_dc": no_fsync(9.3, 8.4, lost=3)}
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks["4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"]["limit"]
    assert not checks["4000 partitions, DC loss (leader_in_lost_dc, the survivors' fsync skipped): "
                      "acknowledged records lost"]["met"]  # fmt: skip


def test_a_stall_target_not_met_holds_the_leaderships_limit_only_when_without_them_it_met_it_and_its_control_did_not():
    large = size(4000, 140, 5.0, 6.9, 12.1)
    report = {"sizes": [size(100, 100, 4.0, 6.2, 8.5), large], "problems": []}
    target = "4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"
    growth = "DC-loss write stall (leader_in_lost_dc) at 4000 over 100 partitions, s"
    # Without fsync still over the floor: not the disk's alone.
    large["dc_loss_no_fsync"] = {"leader_in_lost_dc": no_fsync(10.9, 8.4)}
    large["dc_loss_restarted"] = {"leader_in_lost_dc": no_fsync(12.0, 8.4)}
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks[target]["met"]
    assert not checks[target]["limit"]
    # With the lost DC leading the probe's topic alone, within the target: the leaderships are what is over.
    moved = {**no_fsync(9.2, 8.4), "leaderships_handed_over": 1996}
    large["dc_loss_leaders_moved"] = {"leader_in_lost_dc": moved}
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks[target]["met"]
    assert checks[target]["limit"] == (
        "the survivors' take-over of the lost DC's leaderships: after the same restart, 0.8 s over the floor with the "
        "lost DC leading the probe's topic alone (1996 leaderships handed over first), 3.6 s with them"
    )
    assert checks[growth]["limit"].startswith("the survivors' take-over of the lost DC's leaderships: after the same "
                                              "restart, 0.7 s grown")  # fmt: skip
    assert checks["4000 partitions, DC loss (leader_in_lost_dc, the lost DC leading the probe's topic alone): "
                  "acknowledged records lost"]["met"]  # fmt: skip
    # Its control within the target: the restart took the seconds off, not the leaderships. Nothing is proven.
    large["dc_loss_restarted"] = {"leader_in_lost_dc": no_fsync(9.3, 8.4)}
    assert not {c["target"]: c for c in scale.verdict(report)}[target]["limit"]
    large["dc_loss_restarted"] = {"leader_in_lost_dc": no_fsync(12.0, 8.4)}
    # Over the target even without the leaderships, or with a record lost, or with no count of them: no limit.
    for again in ({**no_fsync(9.5, 8.4), "leaderships_handed_over": 1996},
                  {**no_fsync(9.2, 8.4, lost=1), "leaderships_handed_over": 1996}, no_fsync(9.2, 8.4)):  # fmt: skip
        large["dc_loss_leaders_moved"] = {"leader_in_lost_dc": again}
        assert not {c["target"]: c for c in scale.verdict(report)}[target]["limit"], again
    # Where both hold, the disk's is named: the narrower cause.
    large["dc_loss_leaders_moved"] = {"leader_in_lost_dc": moved}
    large["dc_loss_no_fsync"] = {"leader_in_lost_dc": no_fsync(9.0, 8.4)}
    assert {c["target"]: c for c in scale.verdict(report)}[target]["limit"].startswith("the disk's")


def test_a_stall_over_its_floor_holds_the_fencing_checks_limit_only_for_a_lateness_within_the_checks_period():
    small = size(100, 100, 4.0, 7.25, 9.6)
    report = {"sizes": [small, size(4000, 140, 5.0, 6.4, 9.1)], "problems": []}
    target = "100 partitions, DC-loss stall (leader_elsewhere) over its floor, s"

    def judged(prefix):  # the target's name goes on with the split of the seconds over, where there is one
        return next(c for c in scale.verdict(report) if c["target"].startswith(prefix))

    stall = small["dc_loss"]["leader_elsewhere"]["stall"]
    stall.update({"floor_seconds": 6.0, "phases": {"quorum_election": 0.0}})
    # No fencing moment read from the controller's log: nothing is proven.
    assert not judged(target)["limit"]
    stall["over_floor_split"] = {"fencing": 0.28, "kafka": 0.5, "client": 0.47}
    assert not judged(target)["met"]
    assert judged(target)["limit"] == (
        "Kafka's fencing check: the last lost broker fenced 0.28 s after the floor (the controller looks every 0.75 s, "
        "broker.session.timeout.ms / 8), 0.97 s over the floor besides"
    )
    # Later than the check's period (the controller busy, not its check), or early, or over besides: no limit.
    for late in (0.8, 0.0, -0.3, 0.2):
        stall["over_floor_split"]["fencing"] = late
        assert not judged(target)["limit"], late
    # With an election, the session is the floor without it: 8.4 - 2.4 = 6.0, its check every 0.75 s.
    lost = small["dc_loss"]["leader_in_lost_dc"]["stall"]
    lost.update({"floor_seconds": 8.4, "phases": {"quorum_election": 2.4},
                 "over_floor_split": {"fencing": 0.7, "kafka": 0.2, "client": 0.1}})  # fmt: skip
    assert judged("100 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s")["limit"].startswith(
        "Kafka's fencing check: the last lost broker fenced 0.7 s after the floor (the controller looks every 0.75 s"
    )
    assert scale.fence_check_seconds(6.0) == 0.75
    assert scale.fence_check_seconds(0.004) == 0.001


def test_the_lost_dcs_leaderships_are_handed_over_by_reordering_their_lists_and_nothing_else():
    replicas = {("t", 0): [201, 202, 101, 102], ("t", 1): [101, 102, 201, 202], ("t", 2): [202, 201, 102, 101],
                ("load", 0): [201, 202, 101, 102], ("u", 0): []}  # fmt: skip
    moves = scale.leaders_out_of(replicas, {201, 202}, keep={"load"})
    assert moves == {"t": {0: [101, 102, 201, 202], 2: [102, 101, 202, 201]}}
    for topic, parts in moves.items():
        for p, listed in parts.items():
            assert sorted(listed) == sorted(replicas[(topic, p)]), "a replica copied or dropped"
    assert scale.leaders_out_of(replicas, {301}) == {}


def test_the_leaderships_handed_over_are_put_back_whatever_happens_inside(monkeypatch):
    bench = object.__new__(scale.ScaleBench)
    lists = {("t", 0): [201, 101], ("t", 1): [101, 201]}
    applied = []
    monkeypatch.setattr(bench, "replicas", lambda: dict(lists), raising=False)
    monkeypatch.setattr(bench, "reorder", applied.append, raising=False)
    seen = []

    def lose():
        with bench.leaders_handed_over({201}, keep=()) as handed:
            seen.append(handed)
            raise scale.BenchFailed("the loss failed")

    with pytest.raises(scale.BenchFailed):
        lose()
    assert seen == [1]
    assert applied == [{"t": {0: [101, 201]}}, {"t": {0: [201, 101]}}]


def test_a_dc_loss_is_run_again_without_fsync_only_where_its_stall_is_over_the_floor(monkeypatch):
    bench = object.__new__(scale.ScaleBench)
    bench.args = type("Args", (), {"steps": ("dc_loss",), "away": 0})()
    bench.first, bench.second = "dc1", "dc2"
    bench.cluster = type(
        "Cluster",
        (),
        {
            "brokers": [
                type("N", (), {"dc": "dc1", "host": "dc1-broker1", "node_id": 101})(),
                type("N", (), {"dc": "dc2", "host": "dc2-broker1", "node_id": 201})(),
            ]
        },
    )()
    stalls = {False: 0.4, True: 1.6}
    runs, switched = [], []
    monkeypatch.setattr(bench, "converges", lambda figures: None, raising=False)
    monkeypatch.setattr(bench, "dc_loss", lambda inside, away: runs.append(inside) or no_fsync(6 + stalls[inside], 6),
                        raising=False)  # fmt: skip
    monkeypatch.setattr(bench, "fsync", lambda brokers, skipped: switched.append(([n.host for n in brokers], skipped)),
                        raising=False)  # fmt: skip
    monkeypatch.setattr(bench, "layered", lambda declared: None, raising=False)
    handed = []

    @contextlib.contextmanager
    def leaders_handed_over(lost, keep):
        handed.append((lost, keep, list(runs)))
        yield 96
        handed.append("put back")

    monkeypatch.setattr(bench, "leaders_handed_over", leaders_handed_over, raising=False)
    monkeypatch.setattr(scale, "offline", lambda total: {})
    bench.base = type("Base", (), {"model": {"declared": {"topics": []}}})()
    monkeypatch.setattr(scale, "internal_partitions", lambda: 0)
    bench.declared = []
    figures = bench.size(100, "http://unused")
    assert runs == [False, True, True, True, True], "only the case over its floor ran again, its control, its leaders"
    assert list(figures["dc_loss_no_fsync"]) == ["leader_in_lost_dc"]
    assert list(figures["dc_loss_restarted"]) == ["leader_in_lost_dc"]
    assert list(figures["dc_loss_leaders_moved"]) == ["leader_in_lost_dc"]
    assert figures["dc_loss_leaders_moved"]["leader_in_lost_dc"]["leaderships_handed_over"] == 96
    assert handed == [({201}, {"load"}, [False, True, True, True]), "put back"], "the lost DC's, after the control"
    assert switched == [(["dc1-broker1"], True), (["dc1-broker1"], False)], "fsync back on the survivors"
    stalls[True] = 0.9
    runs.clear()
    switched.clear()
    assert "dc_loss_no_fsync" not in bench.size(100, "http://unused")
    assert runs == [False, True]
    assert not switched

    def fails_on(brokers, skipped):
        switched.append(skipped)
        if skipped:
            raise scale.BenchFailed("no libeatmydata")

    stalls[True] = 1.6
    bench.problems = []
    monkeypatch.setattr(bench, "fsync", fails_on, raising=False)
    figures = bench.size(100, "http://unused")
    assert switched == [True, False], "a failed switch left the survivors' drop-in in place"
    assert set(figures["dc_loss"]) == {"leader_elsewhere", "leader_in_lost_dc"}, "the size's own figures were lost"
    assert "dc_loss_no_fsync" not in figures
    assert bench.problems == ["100 partitions: the DC loss run again (leader_in_lost_dc): no libeatmydata"]


def test_fsync_is_skipped_through_a_drop_in_and_read_back_from_each_jvm_failing_closed(monkeypatch, tmp_path):
    bench = object.__new__(scale.ScaleBench)
    node = type("N", (), {"host": "dc1-broker1"})()
    commands, maps = [], {"text": "7f00 r-xp /usr/local/lib/bench-scale-libeatmydata.so\n7f01 /usr/bin/java\n"}

    def node_exec(host, command, check=True, timeout=120):
        commands.append(command)
        return maps["text"] if "/maps" in command else ""

    monkeypatch.setattr(bench, "node_exec", node_exec, raising=False)
    monkeypatch.setattr(bench, "playbook", lambda name, **extra: commands.append(name), raising=False)
    monkeypatch.setattr(scale, "eatmydata", lambda workdir: tmp_path / "libeatmydata.so")
    monkeypatch.setattr(scale.subprocess, "run", lambda *a, **k: commands.append(a[0]))
    bench.fsync([node], skipped=True)
    assert ["podman", "cp", str(tmp_path / "libeatmydata.so"), f"dc1-broker1:{scale.NO_FSYNC_LIBRARY}"] in commands
    assert any(f"'Environment=LD_PRELOAD={scale.NO_FSYNC_LIBRARY}' > {scale.NO_FSYNC_DROPIN}" in c
               for c in commands if isinstance(c, str))  # fmt: skip
    assert "rolling_restart" in commands
    with pytest.raises(scale.BenchFailed, match="dc1-broker1's Kafka JVM still skips fsync"):
        bench.fsync([node], skipped=False)
    assert f"rm -f {scale.NO_FSYNC_DROPIN}" in commands
    maps["text"] = ""  # the maps not read: neither state is proven
    with pytest.raises(scale.BenchFailed, match="does not skip"):
        bench.fsync([node], skipped=True)
    with pytest.raises(scale.BenchFailed, match="still skips"):
        bench.fsync([node], skipped=False)
    maps["text"] = "7f01 /usr/bin/java\n"
    bench.fsync([node], skipped=False)


def test_a_figure_the_run_did_not_measure_is_a_target_not_met():
    bare = {"partitions": 100}
    checks = scale.verdict({"sizes": [bare]})
    assert checks
    assert not any(c["met"] for c in checks)
    assert not scale.verdict({"sizes": []})


def test_a_saved_report_gets_its_table_picture_and_verdict(tmp_path, capsys):
    report = {"sizes": [size(100, 100, 4.0, 6.2, 8.9), size(4000, 140, 5.0, 6.4, 9.1)], "problems": []}
    for s, n in zip(report["sizes"], (100, 4000), strict=True):
        s["offline"] = {"preflight_seconds": 0.001 * n, "placement_create_seconds": 0.00002 * n}
    partial = scale.finish({**report, "steps": ["converges"]}, tmp_path / "partial.json", tmp_path / "partial.png")
    assert (tmp_path / "partial.json").exists()
    assert not (tmp_path / "partial.png").exists(), "a partial run drew over the docs' picture"
    capsys.readouterr()
    done = scale.finish(report, tmp_path / "bench-scale.json", tmp_path / "bench-scale.png")
    assert done["ok"]
    assert partial["ok"]
    assert (tmp_path / "bench-scale.png").stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "| no-op converge, s | 100 | 140 |" in out
    assert done["extrapolated"]["no-op converge, s"]["slope"] == pytest.approx(math.log(1.4) / math.log(40), abs=1e-3)
    assert "met      a no-op converge at 4000 over 100 partitions" in out


def test_a_containers_cpu_time_is_read_from_podmans_go_durations():
    assert scale.go_seconds("6.861024261s") == pytest.approx(6.861024261)
    assert scale.go_seconds("1m2.5s") == 62.5
    assert scale.go_seconds("1h0m3s") == 3603
    assert scale.go_seconds("830ms") == pytest.approx(0.83)
    assert scale.go_seconds("12µs") == pytest.approx(12e-6)
    for text in ("", "6.8", "6.8 s", "1m2.5sx", None):
        with pytest.raises(ValueError, match="not a Go duration"):
            scale.go_seconds(text)
    stats = [{"name": "dc1-broker1", "cpu_time": "2s"}, {"name": "dc1-spark", "cpu_time": "1s"}]
    assert scale.containers_cpu_seconds(stats, ["dc1-broker1"]) == {"dc1-broker1": 2.0}
    with pytest.raises(ValueError, match="no CPU time for dc2-broker1"):
        scale.containers_cpu_seconds(stats, ["dc1-broker1", "dc2-broker1"])


def test_a_steps_cpu_is_split_between_the_controller_and_the_nodes_and_the_nodes_given_in_cores():
    before = {"controller": 10.0, "nodes": {"a": 100.0, "b": 50.0}}
    after = {"controller": 40.0, "nodes": {"a": 130.0, "b": 80.0}}
    assert scale.cpu_figures(before, after, 40.0) == {
        "controller_cpu_seconds": 30.0, "nodes_cpu_seconds": 60.0, "nodes_cores": 1.5,
    }  # fmt: skip
    assert scale.cpu_figures(before, after, 0)["nodes_cores"] is None


def test_the_no_op_converges_cpu_on_the_controller_is_judged_beside_its_wall_time():
    small = {"partitions": 100, "noop_converge_seconds": 75.0, "noop_converge_cpu": {"controller_cpu_seconds": 60.0}}
    large = {"partitions": 4000, "noop_converge_seconds": 131.0, "noop_converge_cpu": {"controller_cpu_seconds": 66.0}}
    checks = {c["target"]: c for c in scale.verdict({"sizes": [small, large]})}
    assert not checks["a no-op converge at 4000 over 100 partitions"]["met"]
    cpu = checks["a no-op converge's CPU on the controller at 4000 over 100 partitions"]
    assert (cpu["value"], cpu["met"]) == (1.1, True)


def test_the_stall_probes_settings_are_key_value_pairs_and_anything_else_is_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        scale.main(["--probe", "retry.backoff.max.ms", "--offline"])
    assert refused.value.code == 2
    assert "--probe takes KEY=VALUE" in capsys.readouterr().err


def test_the_probes_client_log_goes_to_its_own_file_each_line_stamped(tmp_path):
    import logging

    path = tmp_path / "probe.log"
    logger = scale.file_logger("stall-probe.test", path)
    logger.log(logging.DEBUG, "MSGSET [rdkafka#producer-1] load [3]: MessageSet with 1 message(s) delivered")
    logger.handlers[0].flush()
    line = path.read_text().splitlines()[0]
    assert line.endswith("load [3]: MessageSet with 1 message(s) delivered")
    assert datetime.datetime.strptime(line.split()[0], "%H:%M:%S.%f")
    assert not logger.propagate, "the client's debug lines would reach the bench's own output"


def test_the_stall_probes_settings_are_typed_for_kafka_python_and_strings_for_librdkafka():
    assert scale.probe_setting("linger_ms=10", "kafka-python") == ("linger_ms", 10)
    assert scale.probe_setting("enable_idempotence=True", "kafka-python") == ("enable_idempotence", True)
    assert scale.probe_setting("compression_type=lz4", "kafka-python") == ("compression_type", "lz4")
    assert scale.probe_setting("linger.ms=10", "librdkafka") == ("linger.ms", "10")
    assert scale.probe_setting("debug=msg,eos", "librdkafka") == ("debug", "msg,eos")


LOAD_CONFIG = {"bootstrap.servers": "10.91.1.11:9092", "security.protocol": "sasl_ssl",
               "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "load", "sasl.password": "secret",
               "ssl.ca.location": "/ca.pem", "ssl.endpoint.identification.algorithm": "https"}  # fmt: skip


def test_the_stall_probe_can_run_kafka_python_with_the_loads_login_and_the_projects_producer_settings():
    from testkit.producer import KafkaPythonProducer, kafka_python_problems

    probe = scale.StallProbe(LOAD_CONFIG, "load", [0, 1], client="kafka-python", settings={"linger_ms": 10})
    assert probe.config["sasl_plain_username"] == "load"
    assert probe.config["security_protocol"] == "SASL_SSL"
    assert probe.config["linger_ms"] == 10
    assert probe.config["delivery_timeout_ms"] == 300000, "the probe must outlive a DC loss without giving a record up"
    assert kafka_python_problems(probe.config) == []
    made = {}
    producer = KafkaPythonProducer(probe.config, make_producer=lambda **kw: made.update(kw) or object())
    assert producer is not None
    assert made["max_in_flight_requests_per_connection"] == 1
    assert made["enable_idempotence"]
    assert made["acks"] == "all"


def test_the_stall_probe_runs_librdkafka_by_default_with_its_statistics_and_refuses_another_client():
    probe = scale.StallProbe(LOAD_CONFIG, "load", [0, 1], settings={"linger.ms": "10"})
    assert probe.client == "librdkafka"
    assert probe.config["statistics.interval.ms"] == 100
    assert probe.config["linger.ms"] == "10"
    assert probe.config["max.in.flight.requests.per.connection"] == 1
    with pytest.raises(ValueError, match="librdkafka, kafka-python"):
        scale.StallProbe(LOAD_CONFIG, "load", [0, 1], client="java")
    with pytest.raises(ValueError, match="unknown setting.*retry.backoff.max.ms"):
        scale.StallProbe(LOAD_CONFIG, "load", [0, 1], client="kafka-python", settings={"retry.backoff.max.ms": 250})


def test_the_stall_probe_records_each_clients_acknowledgements_and_leaders_alike():
    class Librdkafka:
        def partition(self):
            return 3

        def timestamp(self):
            return (1, 1_000_500)

    metadata = type("RecordMetadata", (), {"partition": 3, "timestamp": 1_000_500})()
    for client, msg in (("librdkafka", Librdkafka()), ("kafka-python", metadata)):
        probe = scale.StallProbe(LOAD_CONFIG, "load", [3], client=client)
        probe._delivered(None, msg)
        assert [(p, written) for p, _, written in probe.acks] == [(3, 1000.5)], client
        probe._saw({3: 201})
        probe._saw({3: 201})
        probe._saw({3: 101})
        assert [leaders for _, leaders in probe.leaders] == [{3: 201}, {3: 101}], client
    probe = scale.StallProbe(LOAD_CONFIG, "load", [3], client="kafka-python")
    probe._delivered(RuntimeError("KafkaTimeoutError"), None)
    assert probe.errors == [(None, "RuntimeError('KafkaTimeoutError')")]
    assert probe.acks == []


def beside(stall, floor, errors=0):
    return {"client": "per-partition", "errors": errors, "stall_seconds": stall,
            "over_floor_seconds": round(stall - floor, 2)}  # fmt: skip


def test_a_stall_target_not_met_holds_the_turns_limit_only_when_a_producer_per_partition_in_the_same_loss_met_it():
    small, large = size(100, 100, 4.0, 6.2, 8.5), size(4000, 140, 5.0, 6.9, 10.1)
    report = {"sizes": [small, large], "problems": []}
    target = "4000 partitions, DC-loss stall (leader_in_lost_dc) over its floor, s"
    growth = "DC-loss write stall (leader_in_lost_dc) at 4000 over 100 partitions, s"
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks[target]["met"]
    assert not checks[target]["limit"]
    # The producer per partition beside the probe, in the same loss, within the target: the turns are what is over.
    large["dc_loss"]["leader_in_lost_dc"]["stall"]["beside"] = beside(9.1, 8.4)
    small["dc_loss"]["leader_in_lost_dc"]["stall"]["beside"] = beside(8.3, 8.4)
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert not checks[target]["met"]
    assert checks[target]["limit"] == (
        "librdkafka's turns: in the same loss, 0.7 s over the floor with a producer per partition beside the probe, "
        "1.7 s with the probe's one (librdkafka puts one partition in each request and a connection carries one at "
        "a time: confluentinc/librdkafka#1700)"
    )
    # The growth, each probe against its own smallest size's stall: 0.8 s for the one per partition, 1.6 for the probe.
    assert checks[growth]["limit"].startswith("librdkafka's turns: in the same loss, 0.8 s grown")
    assert "1.6 s with the probe's one" in checks[growth]["limit"]
    # Over the target beside it too, or a record given up or lost, or no figure for the smallest size: no limit.
    for stall, errors, lost in ((9.5, 0, 0), (9.1, 2, 0), (9.1, 0, 1)):
        large["dc_loss"]["leader_in_lost_dc"]["stall"]["beside"] = beside(stall, 8.4, errors)
        large["dc_loss"]["leader_in_lost_dc"]["load"]["lost"] = lost
        assert not {c["target"]: c for c in scale.verdict(report)}[target]["limit"], (stall, errors, lost)
    large["dc_loss"]["leader_in_lost_dc"]["load"]["lost"] = 0
    large["dc_loss"]["leader_in_lost_dc"]["stall"]["beside"] = beside(9.1, 8.4)
    del small["dc_loss"]["leader_in_lost_dc"]["stall"]["beside"]
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert checks[target]["limit"]
    assert not checks[growth]["limit"]
    # A stall probe within the target is met, whatever the other saw.
    large["dc_loss"]["leader_in_lost_dc"]["stall"].update(stall_seconds=9.3, over_floor_seconds=0.9)
    checks = {c["target"]: c for c in scale.verdict(report)}
    assert checks[target]["met"]
    assert checks[target]["limit"] is None


def test_the_probe_per_partition_takes_each_partitions_leader_from_the_producer_that_writes_it():
    from testkit.producer import settings_problems

    probe = scale.StallProbe(LOAD_CONFIG, "load", [0, 1], client="per-partition")
    assert settings_problems(probe.config) == [], "PerPartitionProducer would refuse the probe's settings"
    assert probe.config["statistics.interval.ms"] == 100
    assert probe.config["max.in.flight.requests.per.connection"] == 1

    def stats(leaders, writes):
        parts = {str(p): {"leader": leader, "msgs": 5 if p == writes else 0} for p, leader in leaders.items()}
        return json.dumps({"topics": {"load": {"partitions": {**parts, "-1": {"leader": -1, "msgs": 0}}}}})

    # Partition 0's producer has seen the new leader of 1 (a metadata read of the whole topic): only its own counts.
    probe._stats(stats({0: 201, 1: 202}, writes=0))
    probe._stats(stats({0: 201, 1: 202}, writes=1))
    probe._stats(stats({0: 201, 1: 101}, writes=0))
    assert [leaders for _, leaders in probe.leaders] == [{0: 201}, {0: 201, 1: 202}]
    probe._stats(stats({0: 201, 1: 101}, writes=1))
    assert probe.leaders[-1][1] == {0: 201, 1: 101}
    # Its acknowledgements are librdkafka's messages.
    probe._delivered(None, type("Msg", (), {"partition": lambda self: 1, "timestamp": lambda self: (1, 2_000)})())
    assert [(p, written) for p, _, written in probe.acks] == [(1, 2.0)]


def test_the_probe_beside_reports_its_own_stall_against_the_same_floor():
    taken = {101: (106.6, 107.3), 102: (106.7, 107.5)}
    stall = scale.stall_phases(100.0, None, {201: 106.3, 202: 106.5}, 107.0, {0: 107.1, 1: 107.2},
                               {0: 107.4, 1: 108.0}, 6.0, [0, 1], taken)  # fmt: skip
    out = scale.beside_figures("per-partition", 0, stall)
    assert out["stall_seconds"] == 8.0
    assert out["over_floor_seconds"] == 2.0
    assert out["over_floor_split"] == {"fencing": 0.5, "kafka": 1.0, "client": 0.5}
    assert (out["client"], out["errors"], out["first_acknowledgement"]) == ("per-partition", 0, 0.5)
    assert set(out["by_partition"]) == {"0", "1"}
