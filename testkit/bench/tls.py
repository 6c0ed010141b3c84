"""What security costs: the same testbed with TLS + SCRAM + ACLs and with PLAINTEXT, in one run.

Run with `make bench-tls`. It recreates the testbed twice: first with every
listener PLAINTEXT (the overlay testbed/plaintext.yml, which opts in), then as
the local inventory declares it (TLS on every listener, SCRAM clients, ACLs).
For each: fresh and no-op converge, the smoke test's read throughput in each
DC, and the produce latency of the load harness (acks=all, idempotent, both
DCs in the bootstrap) at a fixed rate for LOAD_SECONDS, after a warm-up load
that is discarded. It prints each
figure and the ratio TLS / PLAINTEXT, and writes reports/bench-tls.json. The
machine is shared and noisy: the ratios, measured minutes apart, are the
figures to compare.
"""

from __future__ import annotations

import json
import tempfile
import time

from testkit import cluster as inventory
from testkit.bench.converge import smoke_figures, timed
from testkit.loadtest.background import BackgroundLoad
from testkit.playbook import REPO, run

LOCAL = REPO / "examples/consumer/inventory"
PLAINTEXT = [LOCAL, REPO / "testbed/plaintext.yml"]
LOAD_SECONDS, LOAD_RATE = 60, 200
# A first load right after the smoke test measures the JVMs' warm-up and the
# smoke job's aftermath (p50 20x higher in one run): this one is discarded.
WARMUP_SECONDS = 30


def produce_latency(cluster, seconds=LOAD_SECONDS):
    """p50, p99 and max produce latency of the load harness at LOAD_RATE records/s for `seconds`."""
    with tempfile.TemporaryDirectory() as workdir:
        load = BackgroundLoad(
            cluster.bootstrap_servers, cluster.dcs, rate=LOAD_RATE, workdir=workdir, duration=seconds,
            client_config_file=cluster.client_config_file(workdir, "kafka-load"),
        ).start()  # fmt: skip
        time.sleep(seconds)
        load.stop()
        report = load.report()
    if report["lost"]:
        raise SystemExit(f"bench: the load harness lost {report['lost']} acknowledged records")
    return {k: report[k] for k in ("acknowledged", "latency_p50_ms", "latency_p99_ms", "latency_max_ms")}


def measure(name, source):
    figures = {}
    print(f"bench-tls: {name}", flush=True)
    if not run(source, "testbed/down.yml").ok or not run(source, "testbed/up.yml").ok:
        raise SystemExit("bench-tls: the testbed could not be recreated")
    timed("fresh_converge", "site", figures, source)
    timed("noop_converge", "site", figures, source)
    if figures["noop_converge_changed"]:
        raise SystemExit(f"bench-tls: the no-op converge ({name}) changed something")
    timed("smoke_test", "smoke_test", figures, source)
    smoke = smoke_figures(json.loads((REPO / "reports" / "smoke.json").read_text()))
    figures.update({k: v for k, v in smoke.items() if k.endswith(("records_per_second", "mb_per_second"))})
    cluster = inventory.load(source)
    produce_latency(cluster, WARMUP_SECONDS)
    figures.update(produce_latency(cluster))
    return figures


def main():
    (REPO / "reports").mkdir(exist_ok=True)
    results = {"plaintext": measure("PLAINTEXT", PLAINTEXT), "tls": measure("TLS + SCRAM + ACLs", str(LOCAL))}
    plain, tls = results["plaintext"], results["tls"]
    results["tls_to_plaintext"] = {
        key: round(tls[key] / plain[key], 2)
        for key in plain
        if isinstance(plain[key], (int, float)) and plain[key] and not key.endswith("_changed")
    }
    (REPO / "reports" / "bench-tls.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\n{'figure':<36} {'PLAINTEXT':>12} {'TLS':>12} {'TLS/PLAIN':>10}")
    for key, ratio in results["tls_to_plaintext"].items():
        print(f"{key:<36} {plain[key]:>12} {tls[key]:>12} {ratio:>10}")


if __name__ == "__main__":
    main()
