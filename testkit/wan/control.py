"""Puts the WAN on the testbed, changes it, shows it, takes it off.

The state lives in one directory (testbed/dist/wan): config.json (the links,
the DCs' subnets, which DCs hold brokers, and a probe node per DC),
stats.json (written by the delayer each second), supervisor.pid and
delayer.log. A supervisor (testkit.supervisor) restarts the delayer
(`python -m testkit.wan run`) if it dies; in the meantime --queue-bypass
lets the packets through undelayed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from testkit import REPO
from testkit.supervisor import Supervised, proc_stat

from .links import Link, iptables_rules, links, with_rtt

CHAIN = "STRETCH-WAN"
STATE_DIR = REPO / "testbed/dist/wan"


def _iptables(*args, check=True):
    proc = subprocess.run(["iptables", "-w", *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"iptables {' '.join(args)}: {proc.stderr.strip()}")
    return proc


class State:
    def __init__(self, directory=STATE_DIR):
        self.dir = Path(directory)
        self.config_path, self.stats_path = self.dir / "config.json", self.dir / "stats.json"
        self.pid_path, self.log_path = self.dir / "supervisor.pid", self.dir / "delayer.log"
        self.supervised = Supervised(self.pid_path, "testkit.wan")

    def config(self):
        if not self.config_path.exists():
            raise RuntimeError(f"no WAN on this testbed: {self.config_path} is missing (make up puts it there)")
        return json.loads(self.config_path.read_text())

    def links(self):
        return [Link(**item) for item in self.config()["links"]]

    def stats(self):
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return None

    def supervisor_pid(self):
        """The running supervisor's pid, or None."""
        return self.supervised.pid()

    def report_is_current(self, stats):
        """Whether stats come from the delayer the running supervisor started: a report left by a killed delayer
        (fresh for a few seconds) does not count, since its queues are gone and packets pass undelayed."""
        supervisor = self.supervisor_pid()
        found = proc_stat(stats.get("pid")) if stats and supervisor is not None else None
        return found is not None and found[0] != "Z" and found[1] == supervisor


def rules_now():
    found = _iptables("-S", CHAIN, check=False)
    return found.stdout.splitlines()[1:] if found.returncode == 0 else None  # [0] is "-N CHAIN"


def ensure_rules(wanted):
    """The chain holds exactly the wanted rules and FORWARD jumps to it first; True when anything changed."""
    changed = False
    if rules_now() is None:
        _iptables("-N", CHAIN)
        changed = True
    if _iptables("-C", "FORWARD", "-j", CHAIN, check=False).returncode != 0:
        _iptables("-I", "FORWARD", "1", "-j", CHAIN)
        changed = True
    if rules_now() != wanted:
        _iptables("-F", CHAIN)
        for rule in wanted:
            _iptables(*rule.split())
        changed = True
    return changed


def remove_rules():
    changed = False
    while _iptables("-D", "FORWARD", "-j", CHAIN, check=False).returncode == 0:
        changed = True
    if rules_now() is not None:
        _iptables("-F", CHAIN)
        _iptables("-X", CHAIN)
        changed = True
    return changed


def loaded(stats, active):
    """Whether the delayer's last report shows exactly the active links with their settings."""
    if not stats:
        return False
    want = {f"{x.src}>{x.dst}": (x.delay_ms, x.jitter_ms, x.rate_mbit) for x in active}
    have = {k: (v["delay_ms"], v["jitter_ms"], v["rate_mbit"]) for k, v in stats["links"].items()}
    return want == have and time.monotonic() - stats["monotonic"] < 5


def start_supervisor(state):
    state.dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, "-m", "testkit.wan", "run", "--state-dir", str(state.dir)]
    return state.supervised.start(argv, state.log_path)


def apply_links(state, all_links, subnets, broker_dcs, probes, timeout=20):
    """Makes the testbed's WAN these links; returns {"changed", "links"}."""
    config = {
        "links": [link.as_dict() for link in all_links],
        "subnets": dict(sorted(subnets.items())),
        "broker_dcs": sorted(broker_dcs),
        "probes": {dc: list(p) for dc, p in sorted(probes.items())},
    }
    text = json.dumps(config, indent=1) + "\n"
    state.dir.mkdir(parents=True, exist_ok=True)
    changed = not state.config_path.exists() or state.config_path.read_text() != text
    if changed:
        tmp = state.config_path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(state.config_path)
    pid = state.supervisor_pid()
    if pid is None:
        pid = start_supervisor(state)
        changed = True
    elif changed:
        state.supervised.reload()
    active = [link for link in all_links if link.active]
    deadline = time.monotonic() + timeout
    while not (loaded(stats := state.stats(), active) and state.report_is_current(stats)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"the delayer did not load {state.config_path} within {timeout} s; see {state.log_path}")
        time.sleep(0.2)
    changed |= ensure_rules(iptables_rules(active, subnets, CHAIN))
    return {"changed": changed, "links": [link.as_dict() for link in active]}


def apply(request, state=None):
    """request: {"wan": the inventory's testbed_wan, "subnets": {dc: cidr}, "broker_dcs": [...],
    "probes": {dc: [container, address]}}. Raises WanError on a bad testbed_wan, before changing anything."""
    found = links(request.get("wan"), request["subnets"])
    return apply_links(state or State(), found, request["subnets"], request["broker_dcs"], request["probes"])


def set_rtt(rtt_ms, tiebreaker_rtt_ms=None, state=None):
    """The broker DCs' round trip (and, when given, each broker DC's to the other DCs), on the running testbed."""
    state = state or State()
    config = state.config()
    current = state.links()
    brokers = config["broker_dcs"]
    current = with_rtt(current, *brokers, rtt_ms)
    if tiebreaker_rtt_ms is not None:
        for other in sorted(set(config["subnets"]) - set(brokers)):
            for dc in brokers:
                current = with_rtt(current, dc, other, tiebreaker_rtt_ms)
    return apply_links(state, current, config["subnets"], brokers, config["probes"])


def down(state=None):
    """Takes the WAN off: the rules first (packets flow undelayed), then the delayer."""
    state = state or State()
    changed = remove_rules()
    changed = state.supervised.stop() or changed
    return {"changed": changed}
