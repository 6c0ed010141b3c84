"""python -m testkit.wan: the testbed's WAN between its DCs.

apply     read the inventory's testbed_wan and DCs (testbed/up.yml does), refuse a bad
          testbed_wan, else put the WAN in place; prints {"changed": ...}
check     only judge the inventory's testbed_wan (testbed/up.yml does, before it starts anything)
set       --rtt MS [--tiebreaker-rtt MS]: change the round trip on the running testbed
show      the links, the delayer's counters and a fresh RTT measurement per DC pair
down      take the WAN off (rules, then the delayer)
run       the delayer itself (apply starts it under a supervisor, testkit.supervisor)
"""

from __future__ import annotations

import argparse
import json
import sys

from . import control, inventory, rtt
from .delayer import Delayer
from .links import WanError, links, number_problem

# The testbed's inventory.
INVENTORY = control.REPO / "examples/consumer/inventory"


def show(state):
    config = state.config()
    stats = state.stats() or {"links": {}}
    pid = state.supervisor_pid()
    print(f"delayer: {'running, supervisor pid ' + str(pid) if pid else 'NOT running'}; "
          f"delayer CPU {stats.get('cpu_seconds', '?')} s since its start")  # fmt: skip
    print(f"{'direction':<12} {'delay':>8} {'jitter':>8} {'rate':>10} {'packets':>10} {'bytes':>14} {'dropped':>8}")
    for link in state.links():
        key = f"{link.src}>{link.dst}"
        s = stats["links"].get(key, {})
        rate = f"{link.rate_mbit:g} Mb/s" if link.rate_mbit else "-"
        print(f"{key:<12} {link.delay_ms:>6g}ms {link.jitter_ms:>6g}ms {rate:>10} {s.get('packets', 0):>10} "
              f"{s.get('bytes', 0):>14} {s.get('dropped', 0):>8}")  # fmt: skip
    measured = rtt.measure({dc: tuple(p) for dc, p in config["probes"].items()})
    by_pair = {(x.src, x.dst): x.delay_ms for x in state.links()}
    print("round trips, measured by TCP connects from a node in each DC:")
    for pair, found in measured.items():
        a, b = pair.split("-")
        print(f"  {pair}: set {by_pair[(a, b)] + by_pair[(b, a)]:g} ms, measured p50 {found['p50_ms']} ms "
              f"p99 {found['p99_ms']} ms ({found['n']} connects, {found['failed']} failed)")  # fmt: skip


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.wan", description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["apply", "check", "set", "show", "down", "run"])
    p.add_argument("--state-dir", default=str(control.STATE_DIR))
    p.add_argument("--inventory", action="append", help="apply, check: an inventory source; repeat to layer")
    p.add_argument("--rtt", type=float, help="set: the broker DCs' round trip, ms")
    p.add_argument("--tiebreaker-rtt", type=float, help="set: each broker DC's round trip to the other DCs, ms")
    args = p.parse_args(argv)
    state = control.State(args.state_dir)
    try:
        if args.command == "check":
            request = inventory.read(args.inventory or [str(INVENTORY)])
            found = links(request.get("wan"), request["subnets"])
            print(json.dumps({"changed": False, "links": [x.as_dict() for x in found if x.active]}))
        elif args.command == "apply":
            request = inventory.read(args.inventory or [str(INVENTORY)])
            print(json.dumps(control.apply(request, state)))
        elif args.command == "set":
            if args.rtt is None:
                p.error("set needs --rtt MS (and optionally --tiebreaker-rtt MS)")
            given = {"--rtt": args.rtt, "--tiebreaker-rtt": args.tiebreaker_rtt}
            for option, problem in ((o, number_problem("rtt_ms", v)) for o, v in given.items() if v is not None):
                if problem:
                    p.error(f"set {option}: {problem}")
            print(json.dumps(control.set_rtt(args.rtt, args.tiebreaker_rtt, state)))
            show(state)
        elif args.command == "show":
            show(state)
        elif args.command == "down":
            print(json.dumps(control.down(state)))
        else:
            Delayer(state.config_path, state.stats_path).run()
    except WanError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"testkit.wan {args.command}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
