"""The converge benchmark judges before it writes reports/bench.json, and the report carries the verdict."""

import json
import re
from types import SimpleNamespace

import pytest

from testkit.bench import converge

SMOKE = {"timings": {"checks_seconds": 1.0, "produce_seconds": 2.0}, "reads": []}


class Sampler:
    """A stand-in for the memory sampler: no podman."""

    peak_total, peak_by_container = 3 * 2**30, {"dc1-broker1": 2**30}

    def start(self):
        pass

    def sample(self):
        pass

    def stop(self):
        pass


@pytest.fixture
def bench(tmp_path, monkeypatch):
    """converge.main() against stand-in playbook runs: {playbook: (ok, seconds, changed)}, fresh and no-op
    converge told apart by order; the report it writes."""
    runs = {"testbed/down.yml": [(True, 1.0, 0)], "testbed/up.yml": [(True, 5.0, 9)],
            "site": [(True, 100.0, 300), (True, 30.0, 0)], "smoke_test": [(True, 20.0, 0)]}  # fmt: skip

    def run(inventory, playbook, log_dir=None):
        ok, seconds, changed = runs[playbook].pop(0)
        return SimpleNamespace(
            ok=ok, returncode=0 if ok else 2, seconds=seconds, changed=changed, log=f"{playbook}.log"
        )

    (tmp_path / "reports").mkdir()
    (tmp_path / "reports" / "smoke.json").write_text(json.dumps(SMOKE))
    monkeypatch.setattr(converge, "REPO", tmp_path)
    monkeypatch.setattr(converge, "run", run)
    monkeypatch.setattr(converge, "MemorySampler", Sampler)
    return runs, tmp_path / "reports" / "bench.json"


def test_a_bench_that_passes_writes_its_figures_with_the_verdict(bench):
    _, report = bench
    converge.main()
    found = json.loads(report.read_text())
    assert (found["ok"], found["problems"]) == (True, [])
    assert found["noop_to_fresh_converge_ratio"] == 0.3
    assert found["testbed_peak_memory_mib"] == 3072


def failed(report, problem):
    """main() exits with problem, and the report it wrote says it failed, and why."""
    with pytest.raises(SystemExit, match=re.escape(problem)):
        converge.main()
    found = json.loads(report.read_text())
    assert (found["ok"], found["problems"]) == (False, [problem])
    return found


def test_a_second_converge_that_changed_something_fails_and_its_report_says_so(bench):
    runs, report = bench
    runs["site"][1] = (True, 30.0, 2)
    found = failed(report, "the second converge changed something: the roles are not idempotent")
    assert found["noop_converge_changed"] == 2


def test_a_step_that_failed_leaves_a_report_of_the_failure_not_an_earlier_runs(bench):
    runs, report = bench
    report.write_text(json.dumps({"ok": True}))  # an earlier run's
    runs["site"][0] = (False, 100.0, 0)
    failed(report, "fresh_converge failed (rc=2); see site.log")


def test_a_bench_that_stops_on_any_error_leaves_a_report_of_it_not_an_earlier_runs(bench, tmp_path):
    _, report = bench
    report.write_text(json.dumps({"ok": True}))  # an earlier run's
    (tmp_path / "reports" / "smoke.json").unlink()  # the smoke test wrote no report
    found = failed(report, f"the bench stopped: FileNotFoundError: [Errno 2] No such file or directory: "
                           f"'{tmp_path}/reports/smoke.json'")  # fmt: skip
    assert found["fresh_converge_seconds"] == 100.0, "the figures measured before it stopped are kept"


def test_an_interrupted_bench_leaves_no_earlier_report_standing(bench, monkeypatch):
    _, report = bench
    report.write_text(json.dumps({"ok": True}))  # an earlier run's

    def interrupted(inventory, playbook, log_dir=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(converge, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        converge.main()
    assert not report.exists()
