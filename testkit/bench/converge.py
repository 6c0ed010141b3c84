"""Benchmark of the local testbed: fresh and no-op converge, their ratio, the smoke test, peak memory.

Run with `make bench`. It recreates the testbed. The no-op converge must
report changed=0 and take at most MAX_NOOP_RATIO of the fresh one; the bench
fails otherwise. Figures go to stdout and, once judged, to reports/bench.json
with the verdict ("ok", "problems"). The machine is shared and noisy:
compare the ratios measured in one run rather than absolute times across
runs.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading

from testkit.playbook import REPO, run

LOCAL = REPO / "examples/consumer/inventory"
MAX_NOOP_RATIO = 0.35
UNITS = {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3}


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


class BenchFailed(RuntimeError):
    """A step of the bench that did not run through: its figures are missing, and the bench fails."""


def timed(name, playbook, figures, inventory=LOCAL):
    print(f"bench: {name}: {playbook}", flush=True)
    result = run(inventory, playbook, log_dir=REPO / "reports" / "bench")
    if not result.ok:
        raise BenchFailed(f"{name} failed (rc={result.returncode}); see {result.log}")
    figures[f"{name}_seconds"] = result.seconds
    figures[f"{name}_changed"] = result.changed
    return result


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


def measure(figures):
    """The testbed recreated, both converges, the smoke test and the peak memory, into figures."""
    if not run(LOCAL, "testbed/down.yml").ok:
        raise BenchFailed("testbed/down.yml failed")
    sampler = MemorySampler()
    sampler.start()
    try:
        timed("testbed_up", "testbed/up.yml", figures)
        timed("fresh_converge", "site", figures)
        timed("noop_converge", "site", figures)
        timed("smoke_test", "smoke_test", figures)
        figures["smoke"] = smoke_figures(json.loads((REPO / "reports" / "smoke.json").read_text()))
        sampler.sample()
        figures["testbed_peak_memory_mib"] = round(sampler.peak_total / 2**20)
        figures["testbed_peak_memory_by_node_mib"] = {
            name: round(used / 2**20) for name, used in sorted(sampler.peak_by_container.items())
        }
    finally:
        sampler.stop()
    ratio = figures["noop_converge_seconds"] / figures["fresh_converge_seconds"]
    figures["noop_to_fresh_converge_ratio"] = round(ratio, 2)


def verdict(figures):
    """Why the figures fail the bench: [] when the no-op converge changed nothing and took at most
    MAX_NOOP_RATIO of the fresh one."""
    problems = []
    if figures["noop_converge_changed"] != 0:
        problems.append("the second converge changed something: the roles are not idempotent")
    if figures["noop_to_fresh_converge_ratio"] > MAX_NOOP_RATIO:
        problems.append(f"the no-op converge took more than {MAX_NOOP_RATIO} of the fresh one")
    return problems


def main():
    """Measures, judges, and only then writes reports/bench.json, with the verdict ("ok", "problems") in it: a
    bench that failed, a step of it too, or that stopped on any error, leaves a report that says so, with the
    figures measured until then; an interrupted one leaves none. Never an earlier run's."""
    (REPO / "reports").mkdir(exist_ok=True)
    report = REPO / "reports" / "bench.json"
    report.unlink(missing_ok=True)
    figures, problems = {}, []
    try:
        measure(figures)
        problems += verdict(figures)
    except BenchFailed as exc:
        problems.append(str(exc))
    except Exception as exc:  # noqa: BLE001  any error fails the bench, and its report says which
        problems.append(f"the bench stopped: {type(exc).__name__}: {exc}")
    figures.update(ok=not problems, problems=problems)
    report.write_text(json.dumps(figures, indent=2) + "\n")
    print("\nbench results (also in reports/bench.json)")
    for key, value in figures.items():
        if isinstance(value, dict):
            print(f"  {key}:")
            for name, v in value.items():
                print(f"    {name:<24} {v}")
        else:
            print(f"  {key:<36} {value}")
    if problems:
        raise SystemExit("bench: " + "; ".join(problems))


if __name__ == "__main__":
    main()
