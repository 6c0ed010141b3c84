"""The DC failover drill on the testbed, under load: `make drill-failover` (and Molecule's failover scenario).

Against the running testbed (`make up converge`), with the load harness
writing (acks=all, idempotent) and reading as dc1 and dc2 throughout:

1. dc2 is lost: playbooks/dc-failover.yml kills every dc2 node (its brokers
   and its controller). The quorum must keep a leader, writes must go on, and
   the dc1 reader must keep reading from dc1.
2. dc2 comes back: playbooks/dc-recovery.yml, under the replication
   throttle, until no partition is under-replicated; leaders restored, throttle
   removed, smoke test in both DCs.
3. Only the tiebreaker DC (dc3) is lost, then brought back.
4. dc1 and dc2 are cut from each other (both still reach dc3), then healed.
5. The strict setting (min.insync.replicas=3: every write reaches both DCs):
   losing dc2 blocks writes until dc-failover.yml relaxes it to 2, and
   dc-recovery.yml puts 3 back. The cluster is left at its declared 2.

Then the verifier checks that no acknowledged record was lost or reordered.
Prints the figures and one PASS/FAIL line per check, writes
reports/failover-drill.json, and exits 1 if any check failed.
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
sys.path.insert(0, str(REPO / "collections"))
sys.path.insert(0, str(REPO))

from ansible_collections.stretch.kafka.plugins.module_utils import gates, kafka_admin  # noqa: E402
from loadtest.background import BackgroundLoad  # noqa: E402

BOOTSTRAP = "10.91.1.11:9092,10.91.2.11:9092"
CONTROLLER_DC = {1: "dc1", 2: "dc2", 3: "dc3"}
REPORTS = REPO / "reports"


class Drill:
    def __init__(self, load):
        self.load = load
        self.figures, self.checks, self.logs = {}, [], []

    def mark(self, name, at=None):
        self.load.mark(name, at)

    def check(self, name, passed, detail=""):
        self.checks.append({"check": name, "passed": bool(passed), "detail": detail})
        print(f"{'PASS' if passed else 'FAIL'}  {name}{': ' + str(detail) if detail else ''}", flush=True)

    def playbook(self, name, **extra):
        start = time.monotonic()
        cmd = ["ansible-playbook", "-i", "inventories/local", f"playbooks/{name}.yml", "-e", json.dumps(extra)]
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        log = REPORTS / f"failover-drill-{len(self.logs) + 1}-{name}.log"
        log.write_text(proc.stdout + proc.stderr)
        self.logs.append(str(log))
        return proc, round(time.monotonic() - start, 1)


def killed_at(host):
    """When the node's kafka process went down, on CLOCK_MONOTONIC (shared by the host and its containers)."""
    out = subprocess.run(
        ["podman", "exec", host, "systemctl", "show", "kafka", "-p", "InactiveEnterTimestampMonotonic", "--value"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    return int(out) / 1e6


def snapshot():
    admin = kafka_admin.Admin(BOOTSTRAP, timeout=15)
    try:
        return admin.snapshot()
    finally:
        admin.close()


def throttle_rates():
    """{broker: {rate key: value}} of the replication throttle rates set on the brokers."""
    admin = kafka_admin.Admin(BOOTSTRAP, timeout=15)
    try:
        configs = admin.broker_configs(b for b, info in admin.brokers().items() if not info["fenced"])
        return {b: {k: v for k, v in c.items() if "throttled.rate" in k} for b, c in configs.items()}
    finally:
        admin.close()


def wait_healthy(timeout=600):
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        try:
            if not gates.check("cluster_healthy", snapshot()):
                return round(time.monotonic() - start, 1)
        except Exception:  # noqa: BLE001, S110  a cluster still settling is polled again
            pass
        time.sleep(2)
    return None


def gate_seconds(output, gate):
    found = re.search(rf"cluster {gate} after ([\d.]+) s", output)
    return float(found.group(1)) if found else None


def lose_dc(drill, dc, host, mode="kill"):
    proc, seconds = drill.playbook("dc-failover", kafka_failover_dc=dc, kafka_failover_mode=mode)
    drill.check(f"{dc} lost: dc-failover.yml reports the cluster writable", proc.returncode == 0, drill.logs[-1])
    drill.mark(f"{dc} lost", killed_at(host))
    leader = snapshot()["quorum"]["leader"]
    drill.check(
        f"{dc} lost: the quorum has a leader outside {dc}",
        leader >= 0 and CONTROLLER_DC.get(leader) != dc,
        f"leader {leader}",
    )
    return seconds


def recover_dc(drill, dc, smoke):
    drill.mark(f"{dc} recovering")
    # The host's nftables counters would count the load harness's bytes as the
    # smoke job's; under load the smoke test goes by the brokers' counters.
    proc, seconds = drill.playbook(
        "dc-recovery", kafka_failover_dc=dc, kafka_recovery_smoke_test=smoke, kafka_smoke_network_counters=False
    )
    drill.check(f"{dc} back: dc-recovery.yml passes", proc.returncode == 0, drill.logs[-1])
    left = {b: c for b, c in throttle_rates().items() if c}
    drill.check(f"{dc} back: no replication throttle left on any broker", not left, left or "")
    return seconds, gate_seconds(proc.stdout, "cluster_healthy")


def cluster_min_isr():
    out = subprocess.run(
        ["podman", "exec", "dc1-broker1", "kafka-configs", "--bootstrap-server", "localhost:9092",
         "--command-config", "/etc/kafka/client.properties", "--entity-type", "brokers", "--entity-default",
         "--describe"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    found = re.search(r"min\.insync\.replicas=(\d+)", out)
    return int(found.group(1)) if found else None


def strict_mode(drill):
    strict = {"kafka_min_insync_replicas": 3, "kafka_recovery_smoke_test": False}
    proc, _ = drill.playbook("dc-recovery", kafka_failover_dc="dc3", **strict)
    drill.check("strict: the recovery run sets min.insync.replicas to 3", cluster_min_isr() == 3, cluster_min_isr())
    proc, _ = drill.playbook(
        "dc-failover", kafka_failover_dc="dc2", kafka_failover_min_insync_replicas=3, kafka_gate_timeout=20, **strict
    )
    drill.check(
        "strict: with dc2 lost and min ISR kept at 3, the cluster is not writable",
        proc.returncode != 0 and "under min.insync.replicas" in proc.stdout,
        drill.logs[-1],
    )
    proc, _ = drill.playbook("dc-failover", kafka_failover_dc="dc2", **strict)
    drill.check(
        "strict: dc-failover.yml relaxes min ISR to 2 and the cluster is writable",
        proc.returncode == 0 and cluster_min_isr() == 2,
        drill.logs[-1],
    )
    proc, _ = drill.playbook("dc-recovery", kafka_failover_dc="dc2", kafka_smoke_network_counters=False, **strict)
    drill.check(
        "strict: dc-recovery.yml puts min ISR 3 back", proc.returncode == 0 and cluster_min_isr() == 3, drill.logs[-1]
    )
    proc, _ = drill.playbook("dc-recovery", kafka_failover_dc="dc3", kafka_recovery_smoke_test=False)
    drill.check("the cluster is back at its declared min ISR 2", cluster_min_isr() == 2, cluster_min_isr())


def main():
    REPORTS.mkdir(exist_ok=True)
    load = BackgroundLoad(
        BOOTSTRAP, ["dc1", "dc2"], rate=100, workdir=tempfile.mkdtemp(prefix="failover-drill-"), marks=True
    )
    drill = Drill(load)
    f = drill.figures
    load.start()
    try:
        drill.mark("steady")
        time.sleep(10)

        f["dc2_failover_playbook_seconds"] = lose_dc(drill, "dc2", "dc2-broker1")
        time.sleep(20)
        f["dc2_recovery_playbook_seconds"], f["dc2_recovery_seconds"] = recover_dc(drill, "dc2", smoke=True)

        drill.mark("dc2 back")
        time.sleep(10)
        lose_dc(drill, "dc3", "dc3-controller", mode="stop")
        time.sleep(15)
        _, f["dc3_recovery_seconds"] = recover_dc(drill, "dc3", smoke=False)

        drill.mark("dc1-dc2 cut")
        subprocess.run([str(REPO / "testbed/partition.sh"), "cut", "dc1", "dc2"], check=True)
        time.sleep(30)
        try:
            state = snapshot()
            f["during_cut"] = {
                "quorum_leader": state["quorum"]["leader"],
                "fenced_brokers": sorted(b for b, i in state["brokers"].items() if i["fenced"]),
                "under_replicated_partitions": len(gates.under_replicated(state)),
                "offline_partitions": len(gates.offline(state)),
            }
        except Exception as exc:  # noqa: BLE001  what the cut does to the admin client is a finding too
            f["during_cut"] = {"error": str(exc)}
        drill.mark("healed")
        subprocess.run([str(REPO / "testbed/partition.sh"), "heal"], check=True)
        f["heal_to_healthy_seconds"] = wait_healthy()
        drill.check("after the cut heals, the cluster is whole again", f["heal_to_healthy_seconds"] is not None)
        drill.mark("settled")
        time.sleep(10)
        drill.mark("strict mode")
        strict_mode(drill)
        drill.mark("strict mode done")
        time.sleep(5)
    finally:
        subprocess.run([str(REPO / "testbed/partition.sh"), "heal"], check=False, capture_output=True)
        load.stop()

    result = load.report()
    windows = {w["name"]: w for w in result.get("windows", [])}
    lost = windows.get("dc2 lost", {})
    f["failover_seconds_every_partition_written_again"] = lost.get("every_partition_acked_seconds")
    f["failover_first_ack_seconds"] = lost.get("first_ack_seconds")
    drill.check("dc2 lost: writes acknowledged without dc2", lost.get("acknowledged", 0) > 0, lost.get("acknowledged"))
    drill.check(
        "dc2 lost: every partition acknowledged writes again",
        lost.get("every_partition_acked_seconds") is not None,
        f"after {lost.get('every_partition_acked_seconds')} s",
    )
    dc1 = lost.get("dcs", {}).get("dc1", {})
    drill.check("dc2 lost: the dc1 reader kept reading", dc1.get("read", 0) > 0, dc1.get("read"))
    drill.check(
        "dc2 lost: the dc1 reader read from dc1",
        (dc1.get("own_dc_byte_share") or 0) >= 0.99,
        f"own-DC byte share {dc1.get('own_dc_byte_share')}",
    )
    tiebreaker = windows.get("dc3 lost", {})
    drill.check(
        "dc3 lost: every partition kept acknowledging writes",
        tiebreaker.get("every_partition_acked_seconds") is not None,
        f"longest produce latency in that window {tiebreaker.get('latency_max_ms')} ms",
    )
    f["tiebreaker_loss_latency_max_ms"] = tiebreaker.get("latency_max_ms")
    f["cut_window"] = {k: windows.get("dc1-dc2 cut", {}).get(k) for k in ("acknowledged", "latency_max_ms")}
    for key in ("acknowledged", "lost", "reordered", "duplicates", "produce_errors", "latency_p99_ms", "latency_max_ms",
                "longest_stall_seconds"):  # fmt: skip
        f[f"load_{key}"] = result[key]
    drill.check("no acknowledged record lost, in either DC's reader", result["lost"] == 0, result["lost"])
    drill.check("no record reordered within a partition", result["reordered"] == 0, result["reordered"])
    out = REPORTS / "failover-drill.json"
    out.write_text(json.dumps({"figures": f, "checks": drill.checks, "load": result, "logs": drill.logs}, indent=2))
    for key, value in f.items():
        print(f"{key}: {value}")
    print(f"report: {out}")
    return 0 if all(c["passed"] for c in drill.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
