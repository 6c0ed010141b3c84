"""The smoke read's throughput on each DC's Spark cluster against local[2] on this machine, in one run.

Run with `make bench-spark` against the running testbed (`make up converge`).
Alternates the two, ROUNDS times each, each a read as every broker DC of the
same data size, and prints the figures and their ratio; writes
reports/bench-spark.json. The machine is noisy (2 cores for 9 containers):
compare the ratio, measured in one run, not the absolute figures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from testkit import cluster as inventory
from testkit.playbook import REPO

ROUNDS = 2
RECORDS_PER_PARTITION = 2000
CLUSTER = inventory.load()


def smoke(mode, workdir):
    """One smoke run (every DC, no control read); its reads' figures."""
    report = Path(workdir) / f"smoke-{mode}.json"
    extra = CLUSTER.spark_args(workdir) if mode == "cluster" else ["--master", "local[2]"]
    cmd = [
        sys.executable, "-m", "kafka_smoke", "--bootstrap-servers", CLUSTER.bootstrap_servers,
        "--spark-submit", os.path.join(os.path.dirname(sys.executable), "spark-submit"),
        "--jars", str(REPO / "testbed/dist/spark-jars"), "--records-per-partition", str(RECORDS_PER_PARTITION),
        "--client-config", str(CLUSTER.client_config_file(workdir, "kafka-smoke")), "--no-control",
        "--report", str(report), *[a for dc in CLUSTER.dcs for a in ("--dc", dc)], *extra,
    ]  # fmt: skip
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=1200)  # noqa: S603  fixed arguments
    if proc.returncode != 0:
        raise SystemExit(f"smoke ({mode}) failed:\n{proc.stdout}{proc.stderr[-2000:]}")
    # Each read's own locality, measured in this run: by the brokers' counters,
    # and on the DC clusters by the host's routed bytes too (what crossed DCs).
    return [
        {
            "dc": r["dc"],
            "mb_per_second": r["mb_per_second"],
            "locality_ratio": r["locality_ratio"],
            "crossed_share": r.get("crossed", {}).get("share"),
            "crossed_bytes": r.get("crossed", {}).get("bytes_in"),
            "problems": r["problems"],
            **r["timings"],
        }
        for r in json.loads(report.read_text())["reads"]
    ]


def main():
    runs = {"local[2]": [], "cluster": []}
    with tempfile.TemporaryDirectory() as workdir:
        for _ in range(ROUNDS):
            for mode in runs:
                runs[mode] += smoke(mode, workdir)
    figures = {}
    for mode, reads in runs.items():
        figures[mode] = {
            "reads": reads,
            "median_mb_per_second": statistics.median(r["mb_per_second"] for r in reads),
            "median_read_seconds": statistics.median(r["read_seconds"] for r in reads),
            "median_spark_submit_seconds": statistics.median(r["spark_submit_seconds"] for r in reads),
            "locality_ratio_range": [min(r["locality_ratio"] for r in reads), max(r["locality_ratio"] for r in reads)],
        }
        crossed = [r["crossed_share"] for r in reads if r["crossed_share"] is not None]
        figures[mode]["crossed_share_range"] = [min(crossed), max(crossed)] if crossed else None
        f = figures[mode]
        print(
            f"{mode:>9}: {len(reads)} reads, median {f['median_mb_per_second']} MB/s, "
            f"read {f['median_read_seconds']} s, spark-submit {f['median_spark_submit_seconds']} s, "
            f"locality {f['locality_ratio_range']}, crossed DCs {f['crossed_share_range']}"
        )
    ratio = figures["cluster"]["median_mb_per_second"] / figures["local[2]"]["median_mb_per_second"]
    figures["cluster_over_local"] = round(ratio, 2)
    print(f"throughput on the DC clusters / local[2]: {ratio:.2f}")
    (REPO / "reports").mkdir(exist_ok=True)
    (REPO / "reports" / "bench-spark.json").write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
