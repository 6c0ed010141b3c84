"""The soak's independent verifier: the clients' own logs and a full read of the topic, nothing the cluster says.

Inputs (a run's directory, or plain data for judge()):

    producers  {name: [event]}   each producer's acknowledgement log (testkit/soak/producer.py)
    consumers  {name: [event]}   each group member's commit log (testkit/soak/consumer.py)
    reads      {dc: [event]}     the full read of the topic after healing, as each DC (testkit/soak/reader.py)
    faults     [record]          what the soak did and when (testkit/soak/run.py): kind, target, in_model,
                                 start, injected, undo, end (seconds since the epoch)

What it judges, each a count with examples:

- lost: an acknowledged write whose record is not in a DC's read at the
  partition and offset the acknowledgement gave (or, acknowledged without an
  offset, nowhere in its partition); misplaced: found, but at another offset;
- duplicates: a record read more than once (an unacknowledged first copy and
  its retry can do that; reported, not a failure); reordered: a key's
  sequence number lower than one read before it, at a lower offset;
- divergent: an offset whose record differs between the DCs' reads;
- offset regressions: a partition's committed offset lower than one
  committed before it, by any member;
- per fault, the write stall: the longest time a producer had no
  acknowledgement in the window from the fault's start to STALL_MARGIN_S
  after its end (the window's edges count), and per partition;
- beyond the failure model: acknowledgements while such a fault was on
  (from REFUSAL_GRACE_S after it was injected until its undo began): the
  cluster must refuse writes then;
- produce errors and writes left unconfirmed when a producer stopped, as the
  drills judge them, but for those under way while a fault beyond the
  failure model was on (the cluster was to refuse them then);
- a fault recorded with an error (not injected, not undone, its playbook
  failed) or not run at all: the run did not test what it planned.

It fails closed: a missing log (of any DC the run had), a line of a log that
is not whole JSON, a read that stopped on an error or did not reach every
partition's end, a producer log without its end (its unconfirmed writes
unknown) or whose end counts other acknowledgements, errors or unconfirmed
writes than its lines, or a group that committed nothing is a problem named
as such, never a pass.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

from testkit.loadtest.verify import longest_gap, percentile

from . import records

STALL_MARGIN_S = 15.0
REFUSAL_GRACE_S = 2.0
EXAMPLES = 5
# The figures a run prints at its end.
SUMMARY = ("seed", "duration_s", "acked", "lost", "misplaced", "duplicates", "reordered", "divergent",
           "offset_regressions", "produce_errors", "unconfirmed", "max_stall_s", "longest_stall_s",
           "acked_while_beyond_model", "fault_kinds", "problems", "ok")  # fmt: skip


def acknowledgements(events):
    return [e for e in events if e.get("e") == "ack"]


def _read_records(events):
    found = [e for e in events if e.get("e") is None and "p" in e and "o" in e]
    end = next((e for e in reversed(events) if e.get("e") == "end"), None)
    return found, end


def _judge_read(dc, events, acks_by_producer):
    """One DC's read against every acknowledgement: lost, misplaced, duplicates, reordered."""
    found, end = _read_records(events)
    at = {}
    where = defaultdict(list)  # (producer, key, seq) -> [(p, o)]
    for r in found:
        if r.get("foreign"):
            at[(r["p"], r["o"])] = None
            continue
        ident = (r["producer"], r["k"], r["s"])
        at[(r["p"], r["o"])] = ident
        where[ident].append((r["p"], r["o"]))
    lost, misplaced = [], []
    for producer, acks in sorted(acks_by_producer.items()):
        for a in acks:
            ident, p, o = (producer, a["k"], a["s"]), a["p"], a["o"]
            if o is not None and o >= 0:
                if at.get((p, o)) == ident:
                    continue
                (misplaced if where.get(ident) else lost).append(f"{producer} key {a['k']} seq {a['s']} at {p}@{o}")
            elif not any(wp == p for wp, _ in where.get(ident, ())):
                lost.append(f"{producer} key {a['k']} seq {a['s']} in partition {p} (acknowledged without offset)")
    duplicates, reordered = Counter(), Counter()
    dup_examples, reorder_examples = [], []
    seen, highest = set(), {}
    for (p, o), ident in sorted(at.items()):
        if ident is None:
            continue
        producer, key, seq = ident
        if ident in seen:
            duplicates[f"{producer}/{p}"] += 1
            dup_examples.append(f"{producer} key {key} seq {seq} again at {p}@{o}")
            continue
        seen.add(ident)
        if seq < highest.get((producer, key), -1):
            reordered[f"{producer}/{p}"] += 1
            reorder_examples.append(f"{producer} key {key} seq {seq} at {p}@{o} after seq {highest[(producer, key)]}")
        highest[(producer, key)] = max(seq, highest.get((producer, key), -1))
    problems = []
    if end is None:
        problems.append(f"the {dc} read has no end line: the reader did not finish")
    elif not end.get("complete"):
        reached = end.get("reached") or {}
        short = {p: f"{reached.get(p)}/{n}" for p, n in (end.get("ends") or {}).items() if reached.get(p, 0) < n}
        trimmed = {p: n for p, n in (end.get("low") or {}).items() if n}
        problems.append(f"the {dc} read is incomplete: {end.get('error') or 'no error'}; partitions read short "
                        f"{short or 'none'}, records gone to retention {trimmed or 'none'}")  # fmt: skip
    return {
        "records": sum(1 for ident in at.values() if ident is not None),
        "foreign": sum(1 for ident in at.values() if ident is None),
        "complete": bool(end and end.get("complete")),
        "lost": len(lost),
        "lost_examples": lost[:EXAMPLES],
        "misplaced": len(misplaced),
        "misplaced_examples": misplaced[:EXAMPLES],
        "duplicates": sum(duplicates.values()),
        "duplicates_by_producer_partition": dict(sorted(duplicates.items())),
        "duplicate_examples": dup_examples[:EXAMPLES],
        "reordered": sum(reordered.values()),
        "reordered_by_producer_partition": dict(sorted(reordered.items())),
        "reordered_examples": reorder_examples[:EXAMPLES],
        "problems": problems,
        "_at": at,
        "_ends": {int(p): n for p, n in (end or {}).get("ends", {}).items()},
    }


def divergence(reads):
    """Offsets whose record differs between two DCs' reads, below both reads' ends."""
    out, examples = 0, []
    names = sorted(reads)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            ra, rb = reads[a], reads[b]
            for p in sorted(set(ra["_ends"]) & set(rb["_ends"])):
                for o in range(min(ra["_ends"][p], rb["_ends"][p])):
                    x, y = ra["_at"].get((p, o), "missing"), rb["_at"].get((p, o), "missing")
                    if x != y:
                        out += 1
                        examples.append(f"{p}@{o}: {a} read {x}, {b} read {y}")
    return out, examples[:EXAMPLES]


def offset_regressions(consumers):
    """Commits, in time order over every member, that moved a partition's committed offset backwards."""
    commits = sorted(
        ((e["t"], i, member, e["p"], e["o"]) for member, events in consumers.items()
         for i, e in enumerate(events) if e.get("e") == "commit"),
    )  # fmt: skip
    highest, found = {}, []
    for t, _, member, p, o in commits:
        if p in highest and o < highest[p][0]:
            found.append(f"partition {p}: {member} committed {o} at {t:.3f} after {highest[p][1]} committed "
                         f"{highest[p][0]}")  # fmt: skip
        if p not in highest or o >= highest[p][0]:
            highest[p] = (o, member)
    return len(commits), found


def fault_figures(fault, acks_by_producer, run_end):
    """The write stall around one fault, and what was acknowledged while it was on."""
    start = fault["start"]
    end = fault.get("end") or run_end
    window_end = min(end + STALL_MARGIN_S, run_end)
    by_producer = {}
    for producer, acks in sorted(acks_by_producer.items()):
        by_producer[producer] = round(longest_gap([a["ta"] for a in acks], start, max(window_end, start)), 2)
    by_partition = defaultdict(list)
    for acks in acks_by_producer.values():
        for a in acks:
            by_partition[a["p"]].append(a["ta"])
    partition_stall = max((longest_gap(t, start, max(window_end, start)) for t in by_partition.values()),
                          default=0.0)  # fmt: skip
    during = None
    if fault.get("injected") is not None:
        on_from, on_to = fault["injected"] + REFUSAL_GRACE_S, fault.get("undo") or run_end
        if on_to <= on_from:
            # A fault that is an action and holds nothing after it (the rolling restart): while it ran.
            on_from, on_to = start, fault["injected"]
        during = {name: sum(1 for a in acks if on_from <= a["ta"] <= on_to) for name, acks in acks_by_producer.items()}
    return {
        "stall_s": max(by_producer.values(), default=0.0),
        "stall_by_producer": by_producer,
        "partition_stall_s": round(partition_stall, 2),
        "acked_while_on": None if during is None else sum(during.values()),
        "acked_while_on_by_producer": during,
    }


def _outside(writes, windows, run_end):
    """(the writes, of writes [(producer, event)], under way outside every window [(start, end)]; how many of them
    were under way inside one). A write is under way from its sending (ts) to its answer (ta; for one never
    answered, the run's end)."""
    outside = [(name, e) for name, e in writes
               if not any(e["ts"] <= end and e.get("ta", run_end) >= start for start, end in windows)]  # fmt: skip
    return outside, len(writes) - len(outside)


def _writes(writes):
    return [f"{name} key {e['k']} seq {e['s']} to partition {e['p']}" for name, e in writes[:EXAMPLES]]


def judge(producers, consumers, reads, faults):
    problems = []
    acks_by_producer = {name: acknowledgements(events) for name, events in producers.items()}
    acks = [a for acks in acks_by_producer.values() for a in acks]
    errors = [(name, e) for name, events in producers.items() for e in events if e.get("e") == "error"]
    unconfirmed = [(name, e) for name, events in producers.items() for e in events if e.get("e") == "unconfirmed"]
    starts = [e["t"] for events in producers.values() for e in events if e.get("e") == "start"]
    ends = [e["t"] for events in producers.values() for e in events if e.get("e") == "end"]
    for name, events in sorted(producers.items()):
        end = next((e for e in reversed(events) if e.get("e") == "end"), None)
        if end is None:
            problems.append(f"producer {name}'s log has no end: its unconfirmed writes are unknown")
            continue
        held = Counter(e.get("e") for e in events)
        logged = (held["ack"], held["error"], held["unconfirmed"])
        counted = (end.get("acked"), end.get("errors"), end.get("unconfirmed"))
        if logged != counted:
            problems.append(f"producer {name}'s log holds {logged[0]} acknowledgements, {logged[1]} errors and "
                            f"{logged[2]} unconfirmed writes, its end line counts {counted[0]}, {counted[1]} and "
                            f"{counted[2]}: the log is not whole")  # fmt: skip
    if not acks:
        problems.append("no write was acknowledged")
    t0 = min(starts or [a["ta"] for a in acks] or [0.0])
    run_end = max(ends or [a["ta"] for a in acks] or [t0])

    judged = {dc: _judge_read(dc, events, acks_by_producer) for dc, events in sorted(reads.items())}
    if not judged:
        problems.append("no read of the topic to judge the acknowledgements against")
    for read in judged.values():
        problems += read["problems"]
    diverged, diverged_examples = divergence(judged)

    def worst(field):
        return max((r[field] for r in judged.values()), default=0)

    commits, regressions = offset_regressions(consumers)
    if not commits:
        problems.append("the group committed no offset: offsets moving backwards cannot be judged")

    fault_rows, skipped = [], []
    for fault in faults:
        if fault.get("start") is None:
            skipped.append({k: fault.get(k) for k in ("id", "kind", "target", "in_model", "error")})
            continue
        row = {
            "id": fault["id"],
            "kind": fault["kind"],
            "target": fault.get("resolved") or fault["target"],
            "in_model": fault["in_model"],
            "parent": fault.get("parent"),
            "start": round(fault["start"] - t0, 1),
            "end": round((fault.get("end") or run_end) - t0, 1),
            "error": fault.get("error"),
            "planned_at": fault.get("planned_at"),
            "hold": fault.get("hold"),
            "details": fault.get("details"),
            **fault_figures(fault, acks_by_producer, run_end),
        }
        fault_rows.append(row)
    beyond = [r for r in fault_rows if not r["in_model"]]
    beyond_writes = sum(r["acked_while_on"] or 0 for r in beyond)
    if beyond_writes:
        problems.append(
            f"{beyond_writes} write(s) acknowledged while a fault beyond the failure model was on "
            f"(faults {[r['id'] for r in beyond if r['acked_while_on']]}): the cluster must refuse them"
        )
    # A write the client gave up on, or never saw answered, is no pass (as in the drills, testkit.drill), unless
    # it was under way while a fault beyond the model was on: then the cluster was to refuse it.
    refusing = [
        (f["start"], f.get("end") or run_end) for f in faults if not f["in_model"] and f.get("start") is not None
    ]
    failed, failed_beyond = _outside(errors, refusing, run_end)
    left, left_beyond = _outside(unconfirmed, refusing, run_end)
    if failed:
        problems.append(f"{len(failed)} write(s) failed with an error outside the faults beyond the failure model "
                        f"({dict(Counter(e['err'] for _, e in failed))}): {_writes(failed)}")  # fmt: skip
    if left:
        problems.append(f"{len(left)} write(s) neither acknowledged nor failed when the producer stopped, outside "
                        f"the faults beyond the failure model: {_writes(left)}")  # fmt: skip
    # A fault that did not go on, or whose playbook failed, was not tested as planned (or found a failure).
    for r in fault_rows:
        if r["error"]:
            problems.append(f"fault #{r['id']} {r['kind']} {r['target']}: {r['error'].strip()}")
    if skipped:
        problems.append(f"{len(skipped)} planned fault(s) not run: "
                        f"{[(f['id'], f['kind'], f['error']) for f in skipped]}")  # fmt: skip

    latencies = [a["ta"] - a["ts"] for a in acks]
    lost, misplaced, reordered = worst("lost"), worst("misplaced"), worst("reordered")
    for name, count in (("lost", lost), ("misplaced", misplaced), ("reordered", reordered),
                        ("divergent between the DCs' reads", diverged),
                        ("offset regressions", len(regressions))):  # fmt: skip
        if count:
            problems.append(f"{count} {name}")
    all_acks = sorted(a["ta"] for a in acks)
    in_model_stalls = [r["stall_s"] for r in fault_rows if r["in_model"]]
    return {
        "t0": t0,
        "duration_s": round(run_end - t0, 1),
        "sent": sum(e.get("sent", 0) for events in producers.values() for e in events if e.get("e") == "end"),
        "acked": len(acks),
        "acked_by_producer": {name: len(a) for name, a in sorted(acks_by_producer.items())},
        "acked_without_offset": sum(1 for a in acks if a["o"] is None or a["o"] < 0),
        "produce_errors": len(errors),
        "produce_error_kinds": dict(Counter(e["err"] for _, e in errors)),
        "produce_errors_beyond_model": failed_beyond,
        "unconfirmed": len(unconfirmed),
        "unconfirmed_beyond_model": left_beyond,
        "lost": lost,
        "misplaced": misplaced,
        "duplicates": worst("duplicates"),
        "reordered": reordered,
        "divergent": diverged,
        "divergent_examples": diverged_examples,
        "reads": {
            dc: {k: v for k, v in r.items() if not k.startswith("_") and k != "problems"} for dc, r in judged.items()
        },  # fmt: skip
        "commits": commits,
        "offset_regressions": len(regressions),
        "offset_regression_examples": regressions[:EXAMPLES],
        "faults": fault_rows,
        "fault_kinds": sorted({r["kind"] for r in fault_rows}),
        "faults_not_run": skipped,
        "max_stall_s": max(in_model_stalls, default=0.0),
        "max_stall_beyond_model_s": max((r["stall_s"] for r in beyond), default=None),
        "longest_stall_s": round(
            max((longest_gap([a["ta"] for a in p], t0, run_end) for p in acks_by_producer.values()), default=0.0),
            2,
        ),  # fmt: skip
        "acked_while_beyond_model": beyond_writes,
        "latency_p50_ms": round(percentile(latencies, 0.50) * 1000, 1),
        "latency_p99_ms": round(percentile(latencies, 0.99) * 1000, 1),
        "latency_max_ms": round(max(latencies, default=0.0) * 1000, 1),
        "first_ack_s": round(all_acks[0] - t0, 2) if all_acks else None,
        "problems": problems,
        "ok": not problems,
    }


def load_dir(workdir):
    """(producers, consumers, reads, faults, torn lines) of a run's directory; faults is None without a
    faults.jsonl. No log at all of one kind raises."""
    workdir = Path(workdir)
    torn = {}

    def logs(prefix):
        out = {}
        for path in sorted(workdir.glob(f"{prefix}-*.jsonl")):
            out[path.stem[len(prefix) + 1 :]], torn[path.name] = records.read_log(path)
        if not out:
            raise FileNotFoundError(f"{workdir}: no {prefix}-*.jsonl")
        return out

    producers, consumers, reads = logs("producer"), logs("consumer"), logs("read")
    faults_path = workdir / "faults.jsonl"
    faults, torn["faults.jsonl"] = records.read_log(faults_path) if faults_path.exists() else (None, 0)
    return producers, consumers, reads, faults, {k: v for k, v in torn.items() if v}


# What a run's directory holds besides the clients' logs (testkit/soak/run.py writes them), and what is unknown
# without each.
RUN_FILES = {
    "meta.json": "the run's seed, DCs and WAN are unknown, and so which DCs' logs it must have",
    "schedule.json": "what the run planned is unknown: its faults cannot be accounted for",
    "faults.jsonl": "what the run did is unknown: it is not a run without faults",
    "run.json": "whether the run was interrupted, wedged or healed is unknown",
}


def account(planned, recorded):
    """The fault log (recorded: faults.jsonl's records) against the schedule (planned: schedule.json's faults):
    (the planned ids without a record, the problems). Every planned fault must have one record, of the kind,
    target, failure model and parent it was planned with, and no record may be of a fault not planned."""
    by_id = defaultdict(list)
    for rec in recorded:
        by_id[rec.get("id")].append(rec)
    ids = [f["id"] for f in planned]
    unaccounted = [i for i in ids if i not in by_id]
    problems = []
    if unaccounted:
        problems.append(f"planned faults with no record (never started): {unaccounted}")
    unplanned = sorted((i for i in by_id if i not in ids), key=str)
    if unplanned:
        problems.append(f"fault records of faults not in the schedule: {unplanned}")
    twice = sorted(i for i in ids if len(by_id.get(i, ())) > 1)
    if twice:
        problems.append(f"faults recorded more than once: {twice}")
    same = ("kind", "target", "in_model", "parent")
    differ = [f["id"] for f in planned if any(r.get(k) != f[k] for r in by_id.get(f["id"], ()) for k in same)]
    if differ:
        problems.append(f"fault records whose kind, target, failure model or parent differ from the schedule's: "
                        f"{differ}")  # fmt: skip
    return unaccounted, problems


def heal_problems(done):
    """Why a heal (testkit.soak.faults.heal()'s result) did not leave the testbed as a soak must: [] when it did."""
    problems = []
    healthy = done.get("healthy") or {}
    if not healthy.get("passed"):
        problems.append(f"not whole after the heal: {(healthy.get('problems') or ['not judged'])[:3]}")
    if done.get("errors"):
        problems.append(f"steps of the heal failed: {done['errors']}")
    if done.get("left_behind"):
        problems.append(f"left behind after the heal (dc_recovery.yml puts these right): {done['left_behind']}")
    return problems


def run_problems(outcome):
    """Why the run itself (run.json: {"interrupted", "error", "wedged", "heal": {"undone", "heal"}}) fails."""
    problems = []
    if outcome.get("interrupted"):
        problems.append("interrupted (Ctrl-C or SIGTERM): the schedule did not run to its end")
    if outcome.get("error"):
        problems.append(f"the run stopped early: {outcome['error']}")
    if outcome.get("wedged"):
        problems.append(f"wedged: a heal between faults left {outcome['wedged']['problems'][:3]}")
    healed = outcome.get("heal")
    if not healed:
        return [*problems, "the final heal is not recorded: the testbed is not known to be whole"]
    undone = {i: u["error"] for i, u in healed["undone"].items() if u.get("error")}
    if undone:
        problems.append(f"faults the final heal could not undo: {undone}")
    return problems + [f"final heal: {p}" for p in heal_problems(healed["heal"])]


def wan_problems(watch):
    """Why the WAN the run began with (meta.json's wan on) was not there throughout, by what the run's watch saw
    (run.json's wan_watch: testkit.soak.run.WanWatch): [] when every check found it on, with one delayer."""
    if not watch or watch.get("error") or not watch.get("checks"):
        return [f"the WAN was not watched through the run: {(watch or {}).get('error') or 'no check recorded'}"]
    problems = []
    if watch["off"]:
        problems.append(f"the WAN was off in {watch['off']} of {watch['checks']} checks: {watch['off_examples']}")
    if len(watch["delayer_pids"]) > 1:
        problems.append(f"the WAN's delayer was started again during the run (processes {watch['delayer_pids']}): "
                        "packets crossed undelayed until it was")  # fmt: skip
    return problems


def verify(workdir, dcs=None):
    """judge() on a run's directory, and what only the directory tells: the verdict of the run.

    dcs: the DCs that each had a producer, a group member and a read
    (default: meta.json's). Beyond judge(): each file of RUN_FILES must be
    there; a log of one of the DCs missing, or a line of any log that is not
    whole JSON, is a problem (what it held cannot be judged); the fault log
    must account for every planned fault (account()); and the run's own
    outcome in run.json (run_problems()), and, when the run began over the
    WAN, the WAN throughout (wan_problems()). The run's report is this one, so
    judging its directory again gives the same verdict.
    """
    workdir = Path(workdir)
    producers, consumers, reads, faults, torn = load_dir(workdir)
    report = judge(producers, consumers, reads, faults or [])
    report["torn_log_lines"] = torn
    if torn:
        report["problems"].append(f"lines that are not whole JSON, by log: {torn}: what they held is not judged")
    found = {}
    for name, unknown in RUN_FILES.items():
        try:
            found[name] = faults if name == "faults.jsonl" else json.loads((workdir / name).read_text())
        except FileNotFoundError:
            found[name] = None
        except ValueError as exc:
            found[name] = None
            report["problems"].append(f"{name} in {workdir} is not whole JSON ({exc}): {unknown}")
            continue
        if found[name] is None:
            report["problems"].append(f"no {name} in {workdir}: {unknown}")
    meta, planned, outcome = found["meta.json"] or {}, found["schedule.json"], found["run.json"]
    for dc in dcs or meta.get("dcs") or ():
        for prefix, logs in (("producer", producers), ("consumer", consumers), ("read", reads)):
            if dc not in logs:
                report["problems"].append(f"no {prefix}-{dc}.jsonl in {workdir}: {dc}'s {prefix} log is not judged")
    if planned is not None:
        report["faults_planned"] = len(planned)
        report["faults_unaccounted"], problems = account(planned, faults or [])
        report["problems"] += problems
    if outcome is not None:
        report["problems"] += run_problems(outcome)
        if (meta.get("wan") or {}).get("on"):
            report["problems"] += wan_problems(outcome.get("wan_watch"))
    seed, duration = meta.get("seed"), meta.get("duration_s")
    report.update(
        seed=seed, planned_duration_s=duration, run_id=meta.get("run_id"), topic=meta.get("topic"),
        wan=meta.get("wan"), replay=f"make soak SEED={seed} DURATION={int(duration)}s" if duration else None,
        **{k: (outcome or {}).get(k) for k in ("interrupted", "error", "wedged", "heal", "wan_rtt", "wan_watch")},
    )  # fmt: skip
    report["ok"] = not report["problems"]
    return report


def write(report, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
