"""Three rolling restarts in a row under load (`make drill-restart`; one in `make test-trixie`).

Against the running testbed (`make up converge`), or any cluster an inventory
describes (STRETCH_INVENTORY). The load harness writes and reads through all
three restarts; its verifier must find every acknowledged record in both
DCs. Each restart's wall time and the time its gates waited come from the
playbook's own recorded results. Figures go to reports/restart-drill.json.
"""

from __future__ import annotations

import json
import os
import time

from testkit.cluster import REPO, assert_restart_order, playbook, quorum_leader
from testkit.drill import load_problems
from testkit.loadtest.background import BackgroundLoad

# STRETCH_RESTARTS: how many (make test-trixie runs one).
RESTARTS = int(os.environ.get("STRETCH_RESTARTS", "3"))


def test_rolling_restarts_in_a_row_under_load_lose_no_acknowledged_record(cluster, tmp_path):
    reports = REPO / "reports"
    reports.mkdir(exist_ok=True)
    load = BackgroundLoad(
        cluster.bootstrap_servers, cluster.dcs, rate=200, workdir=tmp_path, duration=3600,
        client_config_file=cluster.client_config_file(tmp_path, "kafka-load"),
    )  # fmt: skip
    figures = {"restarts": []}
    load.start()
    try:
        for number in range(1, RESTARTS + 1):
            leader = quorum_leader(cluster)
            run = playbook(
                cluster,
                "rolling_restart",
                log_dir=reports / "restart-drill",
                kafka_ops_restart_smoke_test=number == RESTARTS,
            )
            assert run.ok, f"rolling restart {number} failed; see {run.log}"
            gates = run.stats["kafka_restarts"]
            assert_restart_order(cluster, [g["host"] for g in gates], leader)
            result = {
                "wall_seconds": run.seconds,
                "nodes": len(gates),
                "gate_seconds": round(sum(g["gate_before_seconds"] + g["gate_after_seconds"] for g in gates), 1),
                "slowest_gate": max(
                    ((g["host"], round(g["gate_before_seconds"] + g["gate_after_seconds"], 1)) for g in gates),
                    key=lambda g: g[1],
                ),
            }
            print(f"restart {number}: {result}", flush=True)
            figures["restarts"].append(result)
        time.sleep(10)
    finally:
        load.stop()
    report = load.report()
    figures["load"] = report
    (reports / "restart-drill.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(
        f"load over {RESTARTS} rolling restarts: {report['acknowledged']} acknowledged, lost {report['lost']}, "
        f"reordered {report['reordered']}, duplicates {report['duplicates']}, produce errors "
        f"{report['produce_errors']}, unconfirmed {report['unconfirmed']}, latency p99 {report['latency_p99_ms']} ms, "
        f"max {report['latency_max_ms']} ms, longest stall {report['longest_stall_seconds']} s"
    )
    assert all(r["nodes"] == len(cluster.nodes) for r in figures["restarts"])
    problems = load_problems(report)
    assert not problems, problems
