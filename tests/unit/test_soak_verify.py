"""The soak's verifier on crafted logs: each check passes a clean run and fails the run it is there to catch."""

import json
from collections import Counter

import pytest

from testkit.soak import records, timeline, verify

T0 = 1_000_000.0


def producer_log(name, n, keys=4, partitions=2, step=0.1, start=T0, latency=0.02, skip=()):
    """n writes of one producer, key i % keys to partition key % partitions, one every step s: acknowledged, but
    for those sent in a skip window, which the client gave up on (an error each)."""
    events = [{"e": "start", "run": "r1", "producer": name, "t": start}]
    seq = [0] * keys
    offsets = [0] * partitions
    for i in range(n):
        key = i % keys
        p = key % partitions
        sent = start + i * step
        if not any(lo <= sent < hi for lo, hi in skip):
            events.append({"e": "ack", "k": key, "s": seq[key], "p": p, "o": offsets[p], "ts": sent,
                           "ta": sent + latency})  # fmt: skip
            offsets[p] += 1
        else:
            events.append({"e": "error", "k": key, "s": seq[key], "p": p, "err": "_MSG_TIMED_OUT", "fatal": False,
                           "ts": sent, "ta": sent + 600})  # fmt: skip
        seq[key] += 1
    acked = sum(1 for e in events if e["e"] == "ack")
    events.append({"e": "end", "t": start + n * step + 1, "sent": n, "acked": acked, "errors": n - acked,
                   "unconfirmed": 0})  # fmt: skip
    return events


def read_of(producers, partitions=2):
    """What a full read finds when the topic holds exactly every acknowledged write: each partition's writes of
    all producers in the order they were acknowledged (the acknowledgements' offsets are set to match)."""
    by_partition = {p: [] for p in range(partitions)}
    for name, events in sorted(producers.items()):
        for e in events:
            if e["e"] == "ack":
                by_partition[e["p"]].append((e["ta"], name, e))
    ends = {}
    for p, items in by_partition.items():
        for offset, (_, _name, e) in enumerate(sorted(items, key=lambda x: x[0])):
            e["o"] = offset
        ends[str(p)] = len(items)
    out = [{"p": e["p"], "o": e["o"], "producer": name, "k": e["k"], "s": e["s"]}
           for name, events in sorted(producers.items()) for e in events if e["e"] == "ack"]  # fmt: skip
    out.sort(key=lambda r: (r["p"], r["o"]))
    end = {"e": "end", "low": dict.fromkeys(ends, 0), "ends": ends, "reached": dict(ends), "complete": True}
    return [*out, end]


def commits(points):
    """A member's commit log: (t, partition, offset) points."""
    return [{"e": "commit", "p": p, "o": o, "t": t} for t, p, o in points]


def clean(n=200):
    producers = {"dc1": producer_log("dc1", n), "dc2": producer_log("dc2", n, start=T0 + 0.05)}
    read = read_of(producers)
    consumers = {"dc1": commits([(T0 + 1, 0, 10), (T0 + 2, 0, 20)]), "dc2": commits([(T0 + 1.5, 1, 12)])}
    return producers, consumers, {"dc1": read, "dc2": [dict(r) for r in read]}


def fault(fid, start, end, kind="broker-kill", in_model=True):
    return {"id": fid, "kind": kind, "target": "dc1-broker1", "in_model": in_model, "start": start,
            "injected": start + 0.5, "undo": end - 0.5, "end": end}  # fmt: skip


def records_of(read):
    return [r for r in read if r.get("e") is None]


def test_a_clean_run_passes_with_every_figure_at_zero():
    producers, consumers, reads = clean()
    report = verify.judge(producers, consumers, reads, [fault(1, T0 + 5, T0 + 8)])
    assert report["problems"] == []
    assert report["ok"]
    assert report["acked"] == 400
    for key in ("lost", "misplaced", "duplicates", "reordered", "divergent", "offset_regressions"):
        assert report[key] == 0, key
    assert report["commits"] == 3
    assert report["fault_kinds"] == ["broker-kill"]


def test_an_acknowledged_record_missing_from_one_dcs_read_is_lost():
    producers, consumers, reads = clean()
    reads["dc2"] = [r for r in reads["dc2"] if not (r.get("p") == 1 and r.get("o") == 7)]
    report = verify.judge(producers, consumers, reads, [])
    assert not report["ok"]
    assert report["lost"] == 1
    assert report["reads"]["dc1"]["lost"] == 0
    assert report["reads"]["dc2"]["lost_examples"][0].endswith("at 1@7")
    assert "1 lost" in report["problems"]


def test_another_record_at_an_acknowledged_offset_is_lost_and_one_found_elsewhere_is_misplaced():
    producers, consumers, reads = clean()
    for read in reads.values():
        first, second = read[0], read[1]
        first["s"], first["k"] = 999, 3  # a record no producer acknowledged, at an acknowledged offset
        second["o"] = 10_000  # the acknowledged record, at another offset
    report = verify.judge(producers, consumers, reads, [])
    assert report["lost"] == 1
    assert report["misplaced"] == 1
    assert not report["ok"]


def test_an_acknowledgement_without_an_offset_is_found_by_its_key_and_sequence_in_its_partition():
    producers, consumers, reads = clean()
    ack = next(e for e in producers["dc1"] if e["e"] == "ack" and e["p"] == 1)
    ack["o"] = -1
    assert verify.judge(producers, consumers, reads, [])["ok"]
    for read in reads.values():
        read[:] = [r for r in read if not (r.get("producer") == "dc1" and r.get("k") == ack["k"]
                                             and r.get("s") == ack["s"])]  # fmt: skip
    report = verify.judge(producers, consumers, reads, [])
    assert report["lost"] == 1
    assert "acknowledged without offset" in report["reads"]["dc1"]["lost_examples"][0]


def test_a_record_read_twice_is_a_duplicate_counted_by_producer_and_partition_and_not_a_failure():
    producers, consumers, reads = clean()
    for read in reads.values():
        copy = dict(records_of(read)[5])
        copy["o"] = 5000
        read.insert(-1, copy)
        read[-1]["ends"][str(copy["p"])] = 5001
        read[-1]["reached"][str(copy["p"])] = 5001
    report = verify.judge(producers, consumers, reads, [])
    assert report["duplicates"] == 1
    (where,) = report["reads"]["dc1"]["duplicates_by_producer_partition"]
    assert where == f"{copy['producer']}/{copy['p']}"
    assert report["problems"] == []


def test_a_keys_sequence_going_back_is_reordered():
    producers, consumers, reads = clean()
    for read in reads.values():
        key_records = [r for r in records_of(read) if r["producer"] == "dc1" and r["k"] == 1]
        a, b = key_records[3], key_records[4]
        a["s"], b["s"] = b["s"], a["s"]  # two writes of one key swapped in the log
    for e in producers["dc1"]:
        if e["e"] == "ack" and e["k"] == 1 and e["s"] in (a["s"], b["s"]):
            e["o"] = a["o"] if e["s"] == a["s"] else b["o"]  # the producer saw them land so
    report = verify.judge(producers, consumers, reads, [])
    assert report["lost"] == 0
    assert report["reordered"] == 1
    assert report["reads"]["dc2"]["reordered_by_producer_partition"] == {"dc1/1": 1}
    assert not report["ok"]


def test_reads_of_two_dcs_that_differ_are_divergent():
    producers, consumers, reads = clean()
    last = records_of(reads["dc2"])[-1]
    reads["dc2"].insert(-1, {"p": last["p"], "o": last["o"] + 1, "foreign": True})
    report = verify.judge(producers, consumers, reads, [])
    assert report["divergent"] == 0  # past dc1's end: not compared
    records_of(reads["dc2"])[3]["foreign"] = True
    report = verify.judge(producers, consumers, reads, [])
    assert report["divergent"] == 1
    assert not report["ok"]


def test_a_committed_offset_moving_backwards_is_a_regression_whoever_committed_it():
    producers, consumers, reads = clean()
    consumers["dc2"] += commits([(T0 + 3, 0, 15)])  # dc1 committed 20 on partition 0 at T0+2
    report = verify.judge(producers, consumers, reads, [])
    assert report["offset_regressions"] == 1
    assert "partition 0: dc2 committed 15" in report["offset_regression_examples"][0]
    assert not report["ok"]
    consumers["dc2"][-1]["o"] = 20  # the same offset again is no regression
    assert verify.judge(producers, consumers, reads, [])["offset_regressions"] == 0


def test_a_group_that_committed_nothing_fails_closed():
    producers, _, reads = clean()
    report = verify.judge(producers, {"dc1": [], "dc2": []}, reads, [])
    assert any("committed no offset" in p for p in report["problems"])


def test_the_stall_around_a_fault_is_the_longest_gap_between_acknowledgements_in_its_window():
    producers = {
        "dc1": producer_log("dc1", 600, skip=[(T0 + 20, T0 + 27)]),  # nothing acknowledged for 7 s
        "dc2": producer_log("dc2", 600, start=T0 + 0.05),
    }
    read = read_of(producers)
    faults = [fault(1, T0 + 18, T0 + 30), fault(2, T0 + 40, T0 + 44)]
    report = verify.judge(producers, clean()[1], {"dc1": read}, faults)
    first, second = report["faults"]
    assert first["stall_by_producer"]["dc1"] == pytest.approx(7.0, abs=0.11)
    assert first["stall_s"] == first["stall_by_producer"]["dc1"]
    assert first["stall_by_producer"]["dc2"] == pytest.approx(0.1, abs=0.01)
    assert second["stall_s"] == pytest.approx(0.1, abs=0.01)
    assert report["max_stall_s"] == first["stall_s"]
    assert first["start"] == 18.0


def test_a_stall_at_a_windows_edge_counts():
    producers = {"dc1": producer_log("dc1", 1000, skip=[(T0 + 25, T0 + 60)])}
    report = verify.judge(producers, clean()[1], {"dc1": read_of(producers)}, [fault(1, T0 + 20, T0 + 24)])
    # The window runs to STALL_MARGIN_S after the fault's end, and the producer's last ack was before it.
    assert report["faults"][0]["stall_s"] == pytest.approx(24 + verify.STALL_MARGIN_S - 25, abs=0.11)


def test_writes_acknowledged_while_a_fault_beyond_the_model_was_on_fail_the_run():
    producers, consumers, reads = clean(600)
    beyond = fault(1, T0 + 20, T0 + 40, kind="two-dcs-lost", in_model=False)
    report = verify.judge(producers, consumers, reads, [beyond])
    assert report["acked_while_beyond_model"] > 0
    assert not report["ok"]
    quiet = {name: producer_log(name, 600, start=s, skip=[(T0 + 20, T0 + 40)])
             for name, s in (("dc1", T0), ("dc2", T0 + 0.05))}  # fmt: skip
    report = verify.judge(quiet, consumers, {"dc1": read_of(quiet)}, [beyond])
    assert report["acked_while_beyond_model"] == 0
    assert report["problems"] == []
    assert report["max_stall_s"] == 0.0  # only in-model faults count there
    assert report["max_stall_beyond_model_s"] >= 19


def test_writes_while_a_fault_that_holds_nothing_ran_are_counted_over_its_run():
    producers, consumers, reads = clean(600)  # one write every 0.1 s from each DC, T0 to T0+60
    # A rolling restart: its playbook ran from T0+10 to T0+30, and it was undone at once (nothing to undo).
    restart = {"id": 1, "kind": "rolling-restart", "target": "dc2", "in_model": True, "start": T0 + 10,
               "injected": T0 + 30, "undo": T0 + 30.01, "end": T0 + 30.02}  # fmt: skip
    row = verify.judge(producers, consumers, reads, [restart])["faults"][0]
    assert row["acked_while_on_by_producer"]["dc1"] == pytest.approx(200, abs=2)
    assert row["acked_while_on_by_producer"]["dc2"] == pytest.approx(200, abs=2)
    # A fault that holds: from its taking effect (and the grace) to its undo.
    kill = fault(2, T0 + 10, T0 + 30.5)  # injected T0+10.5, undone T0+30
    row = verify.judge(producers, consumers, reads, [kill])["faults"][0]
    assert row["acked_while_on_by_producer"]["dc1"] == pytest.approx((30 - 10.5 - verify.REFUSAL_GRACE_S) * 10, abs=2)


def test_a_fault_recorded_with_an_error_or_not_run_fails_the_run():
    producers, consumers, reads = clean()
    failed = {**fault(1, T0 + 5, T0 + 8, kind="dc-loss"), "error": "dc_failover.yml failed (log x.json)"}
    report = verify.judge(producers, consumers, reads, [failed])
    assert report["problems"] == ["fault #1 dc-loss dc1-broker1: dc_failover.yml failed (log x.json)"]
    not_run = {"id": 2, "kind": "broker-kill", "target": "dc1-broker1", "in_model": True, "start": None,
               "error": "not run: the run was past twice its length"}  # fmt: skip
    report = verify.judge(producers, consumers, reads, [not_run])
    assert report["faults_not_run"] == [{k: not_run[k] for k in ("id", "kind", "target", "in_model", "error")}]
    assert report["problems"] == ["1 planned fault(s) not run: [(2, 'broker-kill', 'not run: the run was past "
                                  "twice its length')]"]  # fmt: skip


def test_an_incomplete_or_missing_read_and_a_producer_log_without_its_end_fail_closed():
    producers, consumers, reads = clean()
    reads["dc1"][-1]["complete"] = False
    reads["dc1"][-1]["reached"]["0"] = 3
    report = verify.judge(producers, consumers, reads, [])
    assert any("dc1 read is incomplete" in p and "'0': '3/" in p for p in report["problems"])
    reads["dc1"].pop()
    assert any("no end line" in p for p in verify.judge(producers, consumers, reads, [])["problems"])
    producers, consumers, reads = clean()
    producers["dc2"].pop()
    report = verify.judge(producers, consumers, reads, [])
    assert any("producer dc2's log has no end" in p for p in report["problems"])
    assert any("no read" in p for p in verify.judge(producers, consumers, {}, [])["problems"])


def test_a_run_with_nothing_acknowledged_fails_closed():
    """Every write failed: no record can be lost, and nothing was shown to survive either."""
    producers = {name: producer_log(name, 100, skip=[(T0, T0 + 100)]) for name in ("dc1", "dc2")}
    _, consumers, reads = clean()
    empty = {"e": "end", "low": {"0": 0, "1": 0}, "ends": {"0": 0, "1": 0}, "reached": {"0": 0, "1": 0},
             "complete": True}  # fmt: skip
    report = verify.judge(producers, consumers, {"dc1": [empty]}, [])
    assert report["acked"] == report["lost"] == 0
    assert report["produce_errors"] == 200
    assert report["problems"][0] == "no write was acknowledged"
    assert report["problems"][1].startswith("200 write(s) failed with an error outside the faults beyond the ")


def an_error(seq, sent, answered):
    return {"e": "error", "k": 0, "s": seq, "p": 0, "err": "_MSG_TIMED_OUT", "fatal": False, "ts": sent,
            "ta": answered}  # fmt: skip


def an_unconfirmed(seq, sent):
    return {"e": "unconfirmed", "k": 1, "s": seq, "p": 1, "ts": sent}


def with_outcomes(producers, *events):
    """producers' dc1 log with events before its end line, which counts them."""
    producers["dc1"][-1:-1] = events
    held = Counter(e["e"] for e in producers["dc1"])
    producers["dc1"][-1].update(errors=held["error"], unconfirmed=held["unconfirmed"])
    return producers


def test_errors_and_unconfirmed_writes_fail_the_run_and_are_not_losses():
    producers, consumers, reads = clean()
    with_outcomes(producers, an_error(999, T0, T0 + 300), an_unconfirmed(1000, T0 + 1))
    report = verify.judge(producers, consumers, reads, [])
    assert report["produce_errors"] == 1
    assert report["produce_error_kinds"] == {"_MSG_TIMED_OUT": 1}
    assert report["unconfirmed"] == 1
    assert report["lost"] == 0
    assert report["problems"] == [
        "1 write(s) failed with an error outside the faults beyond the failure model ({'_MSG_TIMED_OUT': 1}): "
        "['dc1 key 0 seq 999 to partition 0']",
        "1 write(s) neither acknowledged nor failed when the producer stopped, outside the faults beyond the "
        "failure model: ['dc1 key 1 seq 1000 to partition 1']",
    ]
    assert not report["ok"]


def test_writes_under_way_while_a_fault_beyond_the_model_was_on_may_fail_or_stay_unconfirmed():
    # Nothing acknowledged from T0+5 to T0+10 while the fault was on: each write sent then failed after 600 s.
    refused = [(T0 + 5, T0 + 10)]
    producers = {n: producer_log(n, 200, start=s, skip=refused) for n, s in (("dc1", T0), ("dc2", T0 + 0.05))}
    consumers, reads = clean()[1], {"dc1": read_of(producers)}
    beyond = fault(1, T0 + 5, T0 + 10, kind="two-dcs-lost", in_model=False)
    with_outcomes(
        producers,
        an_error(998, T0 + 1, T0 + 5.5),  # sent before it, failed once it was on
        an_unconfirmed(999, T0 + 9),  # sent while it was on, never answered
    )
    report = verify.judge(producers, consumers, reads, [beyond])
    assert report["produce_errors"] == report["produce_errors_beyond_model"] == 101
    assert (report["unconfirmed"], report["unconfirmed_beyond_model"]) == (1, 1)
    assert report["problems"] == []
    with_outcomes(producers, an_error(1001, T0 + 10.5, T0 + 12), an_unconfirmed(1002, T0 + 11))  # after it
    report = verify.judge(producers, consumers, reads, [beyond])
    assert [p.split(" write(s) ")[0] for p in report["problems"]] == ["1", "1"]
    in_model = {**beyond, "kind": "broker-kill", "in_model": True}  # a fault within the model excuses nothing
    assert len(verify.judge(producers, consumers, reads, [in_model])["problems"]) == 2


def test_a_producer_log_whose_end_counts_other_lines_than_it_holds_fails_closed():
    producers, consumers, reads = clean()
    producers["dc1"].pop(7)  # an acknowledgement lost from the log: the record it names goes unjudged
    report = verify.judge(producers, consumers, reads, [])
    assert report["lost"] == 0
    assert report["problems"] == ["producer dc1's log holds 199 acknowledgements, 0 errors and 0 unconfirmed "
                                  "writes, its end line counts 200, 0 and 0: the log is not whole"]  # fmt: skip
    assert not report["ok"]


PLANNED = [{"id": 1, "kind": "broker-kill", "target": "dc1-broker1", "at": 5.0, "hold": 3.0, "in_model": True,
            "parent": None}]  # fmt: skip
HEALED = {"undone": {}, "heal": {"healthy": {"passed": True, "problems": []}, "left_behind": {}}}
WATCHED = {"interval_s": 5.0, "checks": 60, "off": 0, "off_examples": [], "delayer_pids": [77]}
OUTCOME = {"interrupted": False, "error": None, "wedged": None, "heal": HEALED, "wan_rtt": None, "wan_watch": WATCHED}


def write_dir(path, producers, consumers, reads, planned=PLANNED, outcome=OUTCOME):
    """A run's directory as testkit/soak/run.py leaves it: the clients' logs and reads, the meta, the schedule
    (planned), the fault log (a record of each planned fault) and the run's own outcome."""
    for prefix, logs in (("producer", producers), ("consumer", consumers), ("read", reads)):
        for name, events in logs.items():
            (path / f"{prefix}-{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    meta = {"run_id": "r1", "topic": "soak-r1", "seed": 7, "duration_s": 300.0, "wan": {"on": True},
            "dcs": ["dc1", "dc2"]}  # fmt: skip
    (path / "meta.json").write_text(json.dumps(meta))
    (path / "schedule.json").write_text(json.dumps(planned))
    recorded = [{**f, **fault(f["id"], T0 + f["at"], T0 + f["at"] + f["hold"], f["kind"], f["in_model"]),
                 "target": f["target"]} for f in planned]  # fmt: skip
    (path / "faults.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recorded))
    (path / "run.json").write_text(json.dumps(outcome))


def test_a_run_directory_is_judged_from_its_files_and_a_torn_line_fails_closed(tmp_path):
    write_dir(tmp_path, *clean())
    report = verify.verify(tmp_path)
    assert report["problems"] == []
    assert report["ok"]
    assert len(report["faults"]) == 1
    assert report["faults_unaccounted"] == []
    assert report["replay"] == "make soak SEED=7 DURATION=300s"
    with (tmp_path / "consumer-dc1.jsonl").open("a") as f:
        f.write('{"e": "commit", "p": 0, "o"')  # a commit whose offset is unknown: it could have gone back
    report = verify.verify(tmp_path)
    assert report["torn_log_lines"] == {"consumer-dc1.jsonl": 1}
    assert report["problems"] == ["lines that are not whole JSON, by log: {'consumer-dc1.jsonl': 1}: what they "
                                  "held is not judged"]  # fmt: skip
    assert not report["ok"]
    (tmp_path / "read-dc1.jsonl").unlink()
    (tmp_path / "read-dc2.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="read-"):
        verify.verify(tmp_path)


def test_a_dc_of_the_run_without_its_read_or_its_producers_log_fails_closed(tmp_path):
    producers, consumers, reads = clean()
    del reads["dc2"]
    write_dir(tmp_path, producers, consumers, reads)
    report = verify.verify(tmp_path)
    assert report["problems"] == [f"no read-dc2.jsonl in {tmp_path}: dc2's read log is not judged"]
    assert not report["ok"]
    (tmp_path / "producer-dc2.jsonl").unlink()
    report = verify.verify(tmp_path, dcs=["dc1", "dc2"])
    assert f"no producer-dc2.jsonl in {tmp_path}: dc2's producer log is not judged" in report["problems"]


def test_a_run_directory_without_its_meta_its_fault_log_or_a_dcs_logs_fails_closed(tmp_path):
    """Five faults planned, no fault log, no meta, dc2's logs gone: nothing says what the run did or had."""
    planned = [{**PLANNED[0], "id": i, "at": 5.0 * i} for i in range(1, 6)]
    producers, consumers, reads = clean()
    write_dir(tmp_path, producers, consumers, reads, planned=planned)
    for name in ("faults.jsonl", "meta.json", "producer-dc2.jsonl", "consumer-dc2.jsonl", "read-dc2.jsonl"):
        (tmp_path / name).unlink()
    report = verify.verify(tmp_path)
    assert not report["ok"]
    assert report["problems"] == [
        f"no meta.json in {tmp_path}: {verify.RUN_FILES['meta.json']}",
        f"no faults.jsonl in {tmp_path}: {verify.RUN_FILES['faults.jsonl']}",
        "planned faults with no record (never started): [1, 2, 3, 4, 5]",
    ]
    assert report["faults_unaccounted"] == [1, 2, 3, 4, 5]
    report = verify.verify(tmp_path, dcs=["dc1", "dc2"])  # the DCs known otherwise: their logs are required
    assert f"no producer-dc2.jsonl in {tmp_path}: dc2's producer log is not judged" in report["problems"]
    (tmp_path / "schedule.json").write_text("[{")
    (tmp_path / "run.json").unlink()
    problems = verify.verify(tmp_path)["problems"]
    assert problems[1].startswith(f"schedule.json in {tmp_path} is not whole JSON (")
    assert problems[3] == f"no run.json in {tmp_path}: {verify.RUN_FILES['run.json']}"


@pytest.mark.parametrize(
    ("watch", "problem"),
    [
        (None, "the WAN was not watched through the run: no check recorded"),
        ({"error": "watching the WAN failed: boom"}, "the WAN was not watched through the run: watching the WAN "
                                                     "failed: boom"),
        ({**WATCHED, "off": 2, "off_examples": [{"t": T0, "why": "stale"}]},
         f"the WAN was off in 2 of 60 checks: [{{'t': {T0}, 'why': 'stale'}}]"),
        ({**WATCHED, "delayer_pids": [77, 78]}, "the WAN's delayer was started again during the run (processes "
                                                "[77, 78]): packets crossed undelayed until it was"),
    ],
)  # fmt: skip
def test_a_wan_that_went_off_or_whose_delayer_died_during_the_run_fails_it(tmp_path, watch, problem):
    write_dir(tmp_path, *clean(), outcome={**OUTCOME, "wan_watch": watch})
    report = verify.verify(tmp_path)
    assert report["problems"] == [problem]
    meta = json.loads((tmp_path / "meta.json").read_text())
    (tmp_path / "meta.json").write_text(json.dumps({**meta, "wan": {"on": False}}))  # begun without the WAN
    assert verify.verify(tmp_path)["ok"]


def test_the_fault_log_must_account_for_the_schedule_fault_by_fault():
    planned = [{**PLANNED[0], "id": i} for i in (1, 2, 3)]
    recorded = [dict(planned[0]), dict(planned[0]), {**planned[1], "kind": "broker-pause"}, {**planned[2], "id": 9}]
    unaccounted, problems = verify.account(planned, recorded)
    assert unaccounted == [3]
    assert problems == [
        "planned faults with no record (never started): [3]",
        "fault records of faults not in the schedule: [9]",
        "faults recorded more than once: [1]",
        "fault records whose kind, target, failure model or parent differ from the schedule's: [2]",
    ]
    assert verify.account(planned, [{**f, "start": None, "error": "not run"} for f in planned]) == ([], [])


@pytest.mark.parametrize(
    ("outcome", "problem"),
    [
        ({"interrupted": True}, "interrupted (Ctrl-C or SIGTERM): the schedule did not run to its end"),
        ({"error": "RuntimeError: a client exited"}, "the run stopped early: RuntimeError: a client exited"),
        ({"wedged": {"problems": ["broker 201 fenced"]}}, "wedged: a heal between faults left ['broker 201 fenced']"),
        ({"heal": None}, "the final heal is not recorded: the testbed is not known to be whole"),
        ({"heal": {**HEALED, "undone": {"3": {"error": "dc2: dc_recovery.yml failed"}}}},
         "faults the final heal could not undo: {'3': 'dc2: dc_recovery.yml failed'}"),
        ({"heal": {"undone": {}, "heal": {"healthy": {"passed": False, "problems": ["x"]}}}},
         "final heal: not whole after the heal: ['x']"),
    ],
)  # fmt: skip
def test_the_runs_own_outcome_is_judged_with_its_logs(tmp_path, outcome, problem):
    write_dir(tmp_path, *clean(), outcome={**OUTCOME, **outcome})
    report = verify.verify(tmp_path)
    assert report["problems"] == [problem]
    assert not report["ok"]


def test_records_round_trip_and_anything_else_is_foreign():
    value = records.encode("r1", "dc1", 7, 42, 64)
    assert len(value) == 64
    assert records.decode(value) == ("r1", "dc1", 7, 42)
    assert records.key_bytes("r1", "dc1", 7) == b"r1:dc1:7"
    assert records.decode(b"LOAD:r1:0:1:") is None
    assert records.decode(None) is None
    assert records.decode(b"SOAK:r1:dc1:x:1:") is None


def test_the_timeline_is_drawn_from_the_acknowledgements_and_the_faults(tmp_path):
    producers, consumers, reads = clean()
    report = verify.judge(producers, consumers, reads, [fault(1, T0 + 5, T0 + 8),
                                                        fault(2, T0 + 10, T0 + 12, "two-dcs-lost", False)])  # fmt: skip
    acks = {name: verify.acknowledgements(events) for name, events in producers.items()}
    rates, p50, worst = timeline.series(acks, report["t0"])
    assert sum(rates["dc1"]) == 200
    assert p50[3] == pytest.approx(20.0)
    path = timeline.draw(report, acks, tmp_path / "timeline.png", "a test")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
