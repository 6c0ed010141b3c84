"""The seeded fault soak (docs/faults.md), and each of its faults alone, against the running testbed.

    python -m testkit.soak schedule [--seed N] [--duration 30m]     print the schedule; touches nothing
    python -m testkit.soak run [--seed N] [--duration 30m]          the soak: reports/soak.json, the timeline
    python -m testkit.soak verify DIR [--report F] [--picture F]    judge a run's directory again
    python -m testkit.soak fault KIND [--target T] [--hold S]       inject, hold, undo (Ctrl-C undoes)
    python -m testkit.soak fault KIND [--target T] --leave          inject and leave it on
    python -m testkit.soak undo KIND [--target T]                   take it off (idempotent)
    python -m testkit.soak heal                                     every fault off, the cluster whole again
    python -m testkit.soak kinds                                    the faults and their default targets

Needs root and the testbed (make up converge), except schedule, verify and
kinds. Run through make (make soak, make soak-fault), which sets PYTHONPATH
for the collection.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time

from . import schedule


def _interrupt(*_):
    raise KeyboardInterrupt


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.soak", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("schedule", "run"):
        s = sub.add_parser(name)
        s.add_argument("--seed", type=int, help="default: a random one, printed")
        s.add_argument("--duration", default="30m", help="1800, 30m, 1h (default 30m)")
        s.add_argument("--in-model-only", action="store_true", help="leave out the fault beyond the failure model")
    run = sub.choices["run"]
    run.add_argument("--rate", type=float, default=50, help="records per second of each DC's producer")
    run.add_argument("--report", help="default reports/soak.json")
    run.add_argument("--picture", help="default docs/images/soak-timeline.png")
    run.add_argument("--workdir", help="where each run's logs go (a directory per run), default reports/soak")
    run.add_argument("--without-wan", action="store_true", help="run even when the WAN delayer is not on")
    v = sub.add_parser("verify")
    v.add_argument("dir")
    v.add_argument("--report", help="write the report here too")
    v.add_argument("--picture", help="draw the timeline here")
    for name in ("fault", "undo"):
        f = sub.add_parser(name)
        f.add_argument("kind", choices=sorted(schedule.KINDS))
        f.add_argument("--target", help="a host, a DC, dc1>dc2, dc1<>dc2 or dc2+dc3, as the kind takes; "
                                        "default: python -m testkit.soak kinds")  # fmt: skip
    fault = sub.choices["fault"]
    fault.add_argument("--hold", type=float, default=30, help="seconds the fault stays on (default 30)")
    fault.add_argument("--leave", action="store_true", help="leave it on (undo it with the undo command)")
    sub.add_parser("heal")
    sub.add_parser("kinds")
    return p.parse_args(argv)


def seed_and_duration(args):
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1, 100_000)
    return seed, schedule.parse_duration(args.duration)


def testbed():
    from testkit import cluster as inventory  # noqa: PLC0415  the testbed commands only

    from . import faults  # noqa: PLC0415

    found = inventory.load()
    return faults.Testbed(found, schedule.Topology.of(found), log_dir=inventory.REPO / "reports/soak-faults")


def one_fault(args):
    from . import faults  # noqa: PLC0415

    tb = testbed()
    target = args.target or faults.default_target(args.kind, tb.topology)
    fault = faults.make(args.kind, target)
    volume = faults.Volume(target) if args.kind == "disk-full" else None
    if args.command == "undo":
        out = {"undo": fault.undo(tb)}
        if volume:
            out["volume"] = volume.restore(tb)
        out["healthy"] = tb.wait_healthy(300)
        return out
    out = {}
    try:
        if volume:
            out["volume"] = volume.make(tb)
        started = time.monotonic()
        out["inject"] = fault.inject(tb)
        print(f"{args.kind} {target}: on after {time.monotonic() - started:.1f} s", flush=True)
        if args.leave:
            print(f"left on; take it off with: python -m testkit.soak undo {args.kind} --target '{target}'")
            return out
        time.sleep(args.hold)
    finally:
        if not args.leave:
            out["undo"] = fault.undo(tb)
            if volume:
                out["volume_restored"] = volume.restore(tb)
            out["healthy"] = tb.wait_healthy(300)
            print(f"{args.kind} {target}: off; cluster whole again: {out['healthy']['passed']}", flush=True)
    return out


def main(argv=None):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)
    if args.command == "kinds":
        from . import faults  # noqa: PLC0415

        tb = testbed()
        for name, kind in schedule.KINDS.items():
            model = "" if kind.in_model else "  (beyond the failure model)"
            print(f"{name:<20} default target {faults.default_target(name, tb.topology):<14} {kind.summary}{model}")
        return 0
    if args.command == "schedule":
        from testkit import cluster as inventory  # noqa: PLC0415

        seed, duration = seed_and_duration(args)
        topo = schedule.Topology.of(inventory.load())
        plan = schedule.plan(seed, duration, topo, beyond_model=not args.in_model_only)
        print(schedule.describe(plan, seed, duration))
        return 0
    if args.command == "verify":
        from . import timeline, verify  # noqa: PLC0415

        report = verify.verify(args.dir)
        if args.report:
            verify.write(report, args.report)
        if args.picture:
            acks = {name: verify.acknowledgements(events) for name, events in verify.load_dir(args.dir)[0].items()}
            timeline.draw(report, acks, args.picture)
        print(json.dumps({k: report.get(k) for k in verify.SUMMARY}, indent=1))
        return 0 if report["ok"] else 1
    if args.command in ("fault", "undo"):
        print(json.dumps(one_fault(args), indent=1, default=str))
        return 0
    if args.command == "heal":
        from . import faults, verify  # noqa: PLC0415

        done = faults.heal(testbed())
        print(json.dumps(done, indent=1, default=str))
        problems = verify.heal_problems(done)
        for problem in problems:
            print(f"heal: {problem}", file=sys.stderr)
        return 1 if problems else 0
    from testkit import cluster as inventory  # noqa: PLC0415

    from .run import Soak, default_paths  # noqa: PLC0415

    seed, duration = seed_and_duration(args)
    report_path, picture_path, workdir = default_paths()
    soak = Soak(inventory.load(), seed, duration, args.workdir or workdir, rate=args.rate,
                beyond_model=not args.in_model_only, require_wan=not args.without_wan)  # fmt: skip
    report = soak.run(args.report or report_path, args.picture or picture_path)
    from . import verify  # noqa: PLC0415

    print(json.dumps({k: report.get(k) for k in verify.SUMMARY}, indent=1))
    print(f"report: {args.report or report_path}; picture: {args.picture or picture_path}; replay: {report['replay']}")
    return 0 if report["ok"] else 1


def interrupted_main(argv=None):
    """main(), with what to do next when it was interrupted hard (a Ctrl-C during the heal of a run)."""
    try:
        return main(argv)
    except KeyboardInterrupt:
        print("interrupted: a fault may still be on; `make soak-heal` takes every fault off", file=sys.stderr)
        return 130
