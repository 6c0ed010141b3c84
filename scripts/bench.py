"""Benchmark of the local testbed: converge, smoke test and Molecule wall times, idempotence, peak memory.

Run with `make bench`. It recreates the testbed, so it takes about as long as
two `make demo` runs plus one `make test`'s Molecule stage. Figures go to
stdout and to reports/bench.json. The machine is shared and noisy: compare the
ratios measured in one run rather than absolute times across runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCAL = ["-i", "inventories/local"]
UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}
RECAP = re.compile(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def to_bytes(text):
    number, unit = re.fullmatch(r"([\d.]+)\s*([A-Za-z]+)", text.strip()).groups()
    return float(number) * UNITS[unit]


class MemorySampler(threading.Thread):
    """Samples the memory of the testbed's containers every few seconds; keeps the peak total."""

    def __init__(self, interval=3.0):
        super().__init__(daemon=True)
        self.interval, self.peak_total, self.peak_by_container = interval, 0.0, {}
        self._done = threading.Event()

    def sample(self):
        out = subprocess.run(["podman", "stats", "--no-stream", "--format", "json"], capture_output=True, text=True)
        if out.returncode != 0 or not out.stdout.strip():
            return
        total = 0.0
        for row in json.loads(out.stdout):
            used = to_bytes(row["mem_usage"].split("/")[0])
            total += used
            self.peak_by_container[row["name"]] = max(used, self.peak_by_container.get(row["name"], 0.0))
        self.peak_total = max(self.peak_total, total)

    def run(self):
        while not self._done.wait(self.interval):
            self.sample()

    def stop(self):
        self._done.set()
        self.join()


def timed(name, cmd, figures):
    print(f"bench: {name}: {' '.join(cmd)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    seconds = time.monotonic() - start
    log = REPO / "reports" / f"bench-{name}.log"
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"bench: {name} failed (rc={proc.returncode}); see {log}")
    figures[f"{name}_seconds"] = round(seconds, 1)
    return proc.stdout


def changed_count(output):
    recap = RECAP.findall(output)
    if not recap:
        raise SystemExit("bench: no PLAY RECAP in the converge output")
    return sum(int(changed) for _, changed, _, _ in recap)


def smoke_figures(report):
    """Locality, throughput and step times of each read in the smoke test's report."""
    out = {
        "checks_seconds": report["timings"]["checks_seconds"],
        "produce_seconds": report["timings"]["produce_seconds"],
    }
    for read in report["reads"]:
        name = f"read_{read['dc']}" if read["dc"] else "read_control"
        out[f"{name}_locality"] = read["locality_ratio"] if read["dc"] else read.get("share_by_dc")
        out[f"{name}_records_per_second"] = read["records_per_second"]
        out[f"{name}_mb_per_second"] = read["mb_per_second"]
        for key, value in read["timings"].items():
            out[f"{name}_{key}"] = value
    return out


def main():
    (REPO / "reports").mkdir(exist_ok=True)
    figures = {}
    subprocess.run(["ansible-playbook", *LOCAL, "testbed/down.yml"], cwd=REPO, capture_output=True, check=True)
    sampler = MemorySampler()
    sampler.start()
    try:
        timed("testbed_up", ["ansible-playbook", *LOCAL, "testbed/up.yml"], figures)
        figures["first_converge_changed"] = changed_count(
            timed("first_converge", ["ansible-playbook", *LOCAL, "playbooks/site.yml"], figures)
        )
        figures["second_converge_changed"] = changed_count(
            timed("second_converge", ["ansible-playbook", *LOCAL, "playbooks/site.yml"], figures)
        )
        timed("smoke_test", ["ansible-playbook", *LOCAL, "playbooks/smoke-test.yml"], figures)
        figures["smoke"] = smoke_figures(json.loads((REPO / "reports" / "smoke.json").read_text()))
        sampler.sample()
        figures["testbed_peak_memory_mib"] = round(sampler.peak_total / 2**20)
        figures["testbed_peak_memory_by_node_mib"] = {
            name: round(used / 2**20) for name, used in sorted(sampler.peak_by_container.items())
        }
        timed("molecule_test", ["molecule", "test"], figures)
    finally:
        sampler.stop()
    figures["second_to_first_converge_ratio"] = round(
        figures["second_converge_seconds"] / figures["first_converge_seconds"], 2
    )
    (REPO / "reports" / "bench.json").write_text(json.dumps(figures, indent=2) + "\n")
    print("\nbench results (also in reports/bench.json)")
    for key, value in figures.items():
        if isinstance(value, dict):
            print(f"  {key}:")
            for name, v in value.items():
                print(f"    {name:<24} {v}")
        else:
            print(f"  {key:<36} {value}")
    if figures["second_converge_changed"] != 0:
        raise SystemExit("bench: the second converge changed something: the roles are not idempotent")


if __name__ == "__main__":
    main()
