"""Three rolling restarts in a row under load, with the figures: `make drill-restart`.

Runs against the running testbed (`make up converge`). The load harness writes
and reads through all three restarts; afterwards its verifier reports the
acknowledged records lost (must be 0), the reordering, the produce errors the
application saw, and the produce latency and longest stall. Each restart's
wall time and the time its gates spent waiting are printed too. Figures go to
reports/restart-drill.json. The machine is noisy: compare ratios within a run.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from loadtest.background import BackgroundLoad  # noqa: E402

BOOTSTRAP = "10.91.1.11:9092,10.91.2.11:9092"
GATES = re.compile(r"gates for (\S+): ([\d.]+) s before, ([\d.]+) s after")
RESTARTS = 3


def rolling_restart(number, smoke):
    start = time.monotonic()
    # Under load the host's nftables counters would count the harness's bytes
    # as the smoke job's; the smoke test goes by the brokers' counters.
    extra = {"kafka_restart_smoke_test": smoke, "kafka_smoke_network_counters": False}
    cmd = ["ansible-playbook", "-i", "inventories/local", "playbooks/rolling-restart.yml", "-e", json.dumps(extra)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    log = REPO / "reports" / f"restart-drill-{number}.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode:
        raise SystemExit(f"rolling restart {number} failed; see {log}")
    waits = [(host, float(before), float(after)) for host, before, after in GATES.findall(proc.stdout)]
    return {
        "wall_seconds": round(seconds, 1),
        "gate_seconds": round(sum(b + a for _, b, a in waits), 1),
        "nodes": len(waits),
        "slowest_gate": max(((h, round(b + a, 1)) for h, b, a in waits), key=lambda w: w[1], default=None),
    }


def main():
    (REPO / "reports").mkdir(exist_ok=True)
    load = BackgroundLoad(BOOTSTRAP, ["dc1", "dc2"], rate=200, workdir=tempfile.mkdtemp(prefix="restart-drill-"))
    figures = {"restarts": []}
    load.start()
    try:
        for number in range(1, RESTARTS + 1):
            result = rolling_restart(number, smoke=number == RESTARTS)
            print(f"restart {number}: {result}", flush=True)
            figures["restarts"].append(result)
        time.sleep(10)
    finally:
        load.stop()
    figures["load"] = load.report()
    out = REPO / "reports" / "restart-drill.json"
    out.write_text(json.dumps(figures, indent=2) + "\n")
    load_report = figures["load"]
    print(
        f"load over {RESTARTS} rolling restarts: {load_report['acknowledged']} acknowledged, "
        f"lost {load_report['lost']}, reordered {load_report['reordered']}, duplicates {load_report['duplicates']}, "
        f"produce errors {load_report['produce_errors']}, latency p99 {load_report['latency_p99_ms']} ms, "
        f"max {load_report['latency_max_ms']} ms, longest stall {load_report['longest_stall_seconds']} s"
    )
    print(f"figures: {out}")
    return 0 if load_report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
