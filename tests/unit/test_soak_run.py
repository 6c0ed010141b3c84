"""The soak run's handling of faults, on a stand-in testbed: every fault recorded and undone, whatever happens."""

import json
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from stretch.soak import faults, run
from stretch.soak.schedule import Planned


def node(host, dc, *roles):
    return SimpleNamespace(host=host, dc=dc, roles=roles)


CLUSTER = SimpleNamespace(
    dcs=["dc1", "dc2"],
    brokers=[node("dc1-broker1", "dc1", "broker"), node("dc2-broker1", "dc2", "broker")],
    controllers=[node(f"{dc}-controller", dc, "controller") for dc in ("dc1", "dc2", "dc3")],
)


class StandIn:
    """Records what the faults do; fails an inject or an undo when told to."""

    def __init__(self, fail=()):
        self.fail, self.done, self.lock = set(fail), [], threading.Lock()

    def note(self, what):
        with self.lock:
            self.done.append((time.monotonic(), what))
        if what in self.fail:
            raise faults.FaultError(f"{what} failed")

    def exec(self, node, *cmd, **kw):
        self.note(f"{node}: {' '.join(cmd)}")
        return ""

    def sh(self, node, script, **kw):
        self.note(f"{node}: {script}")
        return ""

    def partition(self, *args):
        self.note(f"partition.sh {' '.join(args)}")
        return ""

    def playbook(self, name, **extra):
        self.note(f"{name}.yml")
        return {"playbook": name, "ok": name != "dc-failover", "seconds": 0.1, "log": f"{name}.json", "stats": {}}

    def what(self):
        return [w for _, w in self.done]


@pytest.fixture
def soak(tmp_path):
    found = run.Soak(CLUSTER, seed=1, duration=1800, workdir=tmp_path, out=lambda *_: None)
    found.workdir.mkdir(parents=True)
    found.tb = StandIn()
    return found


def planned(fid, kind, target, hold=0.05, parent=None):
    return Planned(fid, kind, target, 0.0, hold, kind != "two-dcs-lost", parent)


def records(soak):
    path = soak.workdir / "faults.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_fault_is_injected_held_undone_and_recorded_with_its_times(soak):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    soak.run_fault(planned(1, "oneway", "dc1>dc2", hold=0.2), recorder)
    assert soak.tb.what() == ["partition.sh oneway dc1 dc2", "partition.sh heal"]
    (rec,) = records(soak)
    assert rec["start"] <= rec["injected"] <= rec["undo"] <= rec["end"]
    assert rec["undo"] - rec["injected"] >= 0.2
    assert rec["error"] is None
    assert not soak.active


def test_a_failed_inject_or_playbook_is_recorded_and_the_fault_undone_all_the_same(soak):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    soak.tb.fail = {"partition.sh cut dc1 dc2"}
    soak.run_fault(planned(1, "cut", "dc1<>dc2"), recorder)
    soak.run_fault(planned(2, "dc-loss", "dc2"), recorder)
    cut, lost = records(soak)
    assert cut["error"].startswith("inject: partition.sh cut dc1 dc2 failed")
    assert cut["injected"] is None
    assert lost["error"] == "dc-failover.yml failed (log dc-failover.json)"
    assert soak.tb.what()[-2:] == ["dc-failover.yml", "dc-recovery.yml"]
    assert not soak.active


def test_a_fault_whose_undo_fails_stays_active_and_the_final_heal_takes_it_off(soak, monkeypatch):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    soak.tb.fail = {"partition.sh heal"}
    soak.run_fault(planned(1, "tiebreaker-isolated", "dc3"), recorder)
    assert "undo: partition.sh heal failed" in records(soak)[0]["error"]
    assert list(soak.active) == [1]
    healed = []
    monkeypatch.setattr(faults, "heal", lambda tb, volumes, timeout: healed.append(volumes) or {"healthy": {}})
    soak.tb.fail = set()
    done = soak.heal_everything()
    assert done["undone"] == {1: {"firewall": ""}}
    assert healed == [True]
    assert soak.stop.is_set()


def test_ctrl_c_during_the_hold_undoes_the_fault_before_it_propagates(soak):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")

    def interrupted(timeout):
        raise KeyboardInterrupt

    soak.stop.wait = interrupted
    with pytest.raises(KeyboardInterrupt):
        soak.run_fault(planned(1, "broker-pause", "dc1-broker1", hold=60), recorder)
    assert soak.tb.what()[-1] == "dc1-broker1: systemctl kill --signal=SIGCONT kafka"
    assert records(soak)[0]["end"] is not None


def test_a_slots_overlapping_fault_starts_at_its_offset_while_the_first_is_on(soak):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    pause = planned(1, "broker-pause", "dc1-broker1", hold=2.0)
    kill = planned(2, "broker-kill", "dc1-controller", hold=0.05, parent=1)
    kill.at = 1.0
    pause.children.append(kill)
    soak.run_slot(pause, recorder)
    started = {r["id"]: r["start"] for r in records(soak)}
    assert started[2] - started[1] >= 0.9  # its offset, give or take the primary's own start
    times = {w: t for t, w in soak.tb.done}
    killed = times["dc1-controller: systemctl kill --signal=SIGKILL kafka"]
    assert times["dc1-broker1: systemctl kill --kill-whom=main --signal=SIGSTOP kafka"] < killed
    assert killed < times["dc1-broker1: systemctl kill --signal=SIGCONT kafka"]


def test_an_overlapping_fault_not_yet_started_when_the_soak_stops_is_recorded_as_not_run(soak):
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    soak.stop.set()
    soak.run_child(planned(2, "broker-kill", "dc1-controller", parent=1), time.time() + 60, recorder)
    (rec,) = records(soak)
    assert rec["start"] is None
    assert "not run" in rec["error"]
    assert soak.tb.what() == []


def test_the_ansible_playbooks_this_process_started_are_found_to_be_stopped():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "ansible-playbook"])
    try:
        deadline = time.monotonic() + 10
        while child.pid not in run.playbook_children() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert child.pid in run.playbook_children()
    finally:
        child.kill()
        child.wait(timeout=10)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert other.pid not in run.playbook_children()
    finally:
        other.kill()
        other.wait(timeout=10)
