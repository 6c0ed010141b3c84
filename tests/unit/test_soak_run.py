"""The soak run's handling of faults, on a stand-in testbed: every fault recorded and undone, whatever happens."""

import json
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest

from testkit.soak import faults, run, verify
from testkit.soak.schedule import Planned
from testkit.wan.links import Link


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
        self.paused = set()
        self.cut = False  # the host's cut in place

    def note(self, what):
        with self.lock:
            self.done.append((time.monotonic(), what))
        if what in self.fail:
            raise faults.FaultError(f"{what} failed")

    def exec(self, node, *cmd, **kw):
        if cmd[:3] == ("systemctl", "show", "-p"):
            return "4242"  # kafka's JVM, running
        if cmd[:2] == ("sed", "-n"):  # its state: stopped once paused, else gone (killed)
            return "T" if node in self.paused else ""
        if "--signal=SIGSTOP" in cmd:
            self.paused.add(node)
        self.note(f"{node}: {' '.join(cmd)}")
        return ""

    def sh(self, node, script, **kw):
        self.note(f"{node}: {script}")
        return ""

    def partition(self, *args):
        if args == ("counters",):  # a cut's rules, dropping the DCs' packets
            return "12\n3" if self.cut else "healed"
        self.note(f"partition.sh {' '.join(args)}")
        self.cut = args[0] != "heal"
        return ""

    def playbook(self, name, **extra):
        self.note(f"{name}.yml")
        return {"playbook": name, "ok": name != "dc_failover", "seconds": 0.1, "log": f"{name}.json", "stats": {}}

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
    assert lost["error"] == "dc_failover.yml failed (log dc_failover.json)"
    assert soak.tb.what()[-2:] == ["dc_failover.yml", "dc_recovery.yml"]
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
    slot_start = time.time()
    soak.run_slot(pause, recorder)
    started = {r["id"]: r["start"] for r in records(soak)}
    # Its offset from the slot's start, never earlier (a loaded machine only delays it).
    assert started[2] - slot_start >= 1.0
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


class Clients:
    """A stand-in for the soak's load: notes when it is stopped and left."""

    def __init__(self, notes):
        self.notes = notes

    def __call__(self, *args):
        return self

    def __enter__(self):
        self.notes.append("clients started")
        return self

    def wait_writing(self):
        pass

    def alive(self):
        return {"producer-dc1": True}

    def stop(self):
        self.notes.append("clients stopped")

    def __exit__(self, *exc):
        self.notes.append("clients left")


class Probe:
    """A stand-in for the RTT probe of the WAN (testkit.wan.rtt.RttProbe)."""

    def __init__(self, notes):
        self.notes, self.ident = notes, None

    def start(self):
        self.notes.append("probe started")
        self.ident = 1

    def stop(self):
        self.notes.append("probe stopped")
        return {"dc1-dc2": {"n": 10, "failed": 0, "p50_ms": 30.1}}


class Watch(Probe):
    """A stand-in for the run's WanWatch."""

    def start(self):
        self.notes.append("watch started")
        self.ident = 2

    def stop(self):
        self.notes.append("watch stopped")
        return {"interval_s": 5.0, "checks": 3, "off": 0, "off_examples": [], "delayer_pids": [77]}


@pytest.fixture
def staged(soak, monkeypatch):
    """The soak's run() with everything around execute() stood in for; notes says what happened, in order."""
    notes = []
    monkeypatch.setattr(run, "Clients", Clients(notes))
    monkeypatch.setattr(run, "wan_probe", lambda: Probe(notes))
    monkeypatch.setattr(run, "WanWatch", lambda: Watch(notes))
    soak.check_wan = lambda: notes.append("wan checked") or {"on": True, "links": []}
    soak.prepare = lambda wan: notes.append("prepared") or {"wan": wan}

    def heal():
        notes.append("healed")
        return {"heal": {"healthy": {"passed": True}}}

    soak.heal_everything = heal
    soak.verdict = lambda healed, *paths: notes.append("verdict") or {"healed": healed}
    return soak, notes


@pytest.mark.parametrize("stop", [KeyboardInterrupt, RuntimeError("a client exited")])
def test_an_interrupted_or_failed_run_heals_before_it_stops_the_clients_then_judges(staged, stop):
    soak, notes = staged

    def execute(clients, t0):
        notes.append("executing")
        raise stop

    soak.execute = execute
    soak.run("report.json", "picture.png")
    assert notes == ["wan checked", "prepared", "watch started", "clients started", "probe started",
                     "executing", "healed", "clients stopped", "clients left", "probe stopped", "watch stopped",
                     "verdict"]  # fmt: skip
    assert soak.wan_rtt == {"dc1-dc2": {"n": 10, "failed": 0, "p50_ms": 30.1}}
    assert soak.wan_watch["delayer_pids"] == [77]
    assert soak.interrupted == (stop is KeyboardInterrupt)
    assert (soak.error == "RuntimeError: a client exited") == (stop is not KeyboardInterrupt)


def test_a_second_ctrl_c_during_the_heal_heals_again_and_then_stops(staged):
    soak, notes = staged
    heals = []

    def heal():
        heals.append(len(heals))
        notes.append("healed")
        if len(heals) == 1:
            raise KeyboardInterrupt  # pressed again while the first heal ran
        return {"heal": {"healthy": {"passed": True}}}

    soak.heal_everything = heal
    soak.execute = lambda clients, t0: (_ for _ in ()).throw(KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        soak.run("report.json", "picture.png")
    assert notes == ["wan checked", "prepared", "watch started", "clients started", "probe started", "healed",
                     "clients left", "healed", "probe stopped", "watch stopped"]  # fmt: skip


def test_a_failed_preparation_heals_what_it_left_and_a_missing_wan_touches_nothing(staged):
    soak, notes = staged

    def prepare(wan):
        notes.append("preparing")
        raise SystemExit("soak: the cluster is not whole before the soak")

    soak.prepare = prepare
    with pytest.raises(SystemExit, match="not whole"):
        soak.run("report.json", "picture.png")
    assert notes == ["wan checked", "preparing", "healed"]
    notes.clear()
    soak.check_wan = lambda: (_ for _ in ()).throw(SystemExit("soak: the WAN between the DCs is not on"))
    with pytest.raises(SystemExit, match="WAN"):
        soak.run("report.json", "picture.png")
    assert notes == []


def test_no_slot_starts_past_the_runs_last_start_and_each_of_its_faults_is_recorded_not_run(soak, monkeypatch):
    pause = planned(1, "broker-pause", "dc1-broker1")
    kill = planned(2, "broker-kill", "dc1-controller", parent=1)
    pause.children.append(kill)
    soak.plan = [pause, kill, planned(3, "oneway", "dc1>dc2")]
    soak.duration, soak.give_up_after = 0.0, -1.0
    monkeypatch.setattr(run.schedule, "COOLDOWN_S", 0)
    soak.execute(Clients([]), time.time())
    assert soak.tb.what() == []
    assert [(r["id"], r["start"]) for r in records(soak)] == [(1, None), (2, None), (3, None)]
    assert all(r["error"] == "not run: no slot starts -1 s after the load began" for r in records(soak))


def write_run(workdir, t0):
    """A run's logs: two acknowledged writes of each DC's producer (dc1's to partition 0, dc2's to 1), one commit."""
    for p, dc in enumerate(("dc1", "dc2")):
        acks = [{"e": "ack", "k": p, "s": s, "p": p, "o": s, "ts": t0 + s, "ta": t0 + s + 0.1} for s in (0, 1)]
        logs = {
            "producer": [{"e": "start", "t": t0}, *acks, {"e": "end", "t": t0 + 3, "sent": 2, "acked": 2, "errors": 0,
                                                          "unconfirmed": 0}],
            "consumer": [{"e": "commit", "p": p, "o": 2, "t": t0 + 2}],
        }  # fmt: skip
        for prefix, events in logs.items():
            (workdir / f"{prefix}-{dc}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


class Admin:
    """A stand-in for the admin client: notes the topics deleted."""

    deleted = []

    def __init__(self, config):
        pass

    def delete_topics(self, topics):
        Admin.deleted += topics
        return {t: SimpleNamespace(result=lambda timeout: None) for t in topics}


@pytest.fixture
def judged(soak, monkeypatch):
    """verdict() on a run's directory: the reads stood in for (each DC reads every write back), the picture not
    drawn, the topic's deletion noted."""
    t0 = time.time()
    write_run(soak.workdir, t0)
    soak.cluster = SimpleNamespace(**vars(CLUSTER), client_config={}, bootstrap_servers="unused:9092")

    def read(servers, client, topic, run_id, dc, out):
        found = [{"p": p, "o": s, "producer": f"dc{p + 1}", "k": p, "s": s} for p in (0, 1) for s in (0, 1)]
        ends = {"0": 2, "1": 2}
        end = {"e": "end", "low": {"0": 0, "1": 0}, "ends": ends, "reached": ends, "complete": True}
        out.write_text("".join(json.dumps(e) + "\n" for e in (*found, end)))

    deleted = Admin.deleted = []
    monkeypatch.setattr(run.reader, "read_topic", read)
    monkeypatch.setattr(run.timeline, "draw", lambda *a: None)
    monkeypatch.setattr(run, "AdminClient", Admin)
    soak.plan = [planned(1, "oneway", "dc1>dc2")]
    soak.write_schedule()
    meta = {"run_id": soak.run_id, "topic": soak.topic, "seed": 1, "duration_s": 1800.0, "wan": {"on": False},
            "dcs": ["dc1", "dc2"]}  # fmt: skip
    (soak.workdir / "meta.json").write_text(json.dumps(meta))
    recorder = run.Recorder(soak.workdir / "faults.jsonl")
    recorder.write({**soak.plan[0].as_dict(), "start": t0 + 0.5, "injected": t0 + 0.6, "undo": t0 + 1, "end": t0 + 1.1,
                    "error": None, "details": {}})  # fmt: skip
    healed = {"undone": {}, "heal": {"healthy": {"passed": True, "problems": []}}}
    return soak, healed, deleted


def test_a_verdict_of_a_run_that_did_all_it_planned_passes(judged, tmp_path):
    soak, healed, deleted = judged
    soak.verdict(healed, tmp_path / "soak.json", tmp_path / "soak.png")
    report = json.loads((tmp_path / "soak.json").read_text())
    assert report["problems"] == []
    assert report["ok"]
    assert report["acked"] == 4
    assert report["faults_unaccounted"] == []
    assert report["replay"] == "make soak SEED=1 DURATION=1800s"
    assert deleted == [soak.topic]
    again = json.loads(json.dumps(verify.verify(soak.workdir), default=str))
    assert again == {k: v for k, v in report.items() if k != "workdir"}


def test_an_interrupted_run_a_fault_never_started_and_a_heal_that_failed_a_step_fail_the_verdict(judged, tmp_path):
    soak, healed, deleted = judged
    soak.interrupted = True
    soak.plan.append(planned(2, "cut", "dc1<>dc2"))
    soak.write_schedule()
    healed["heal"]["errors"] = ["firewall: partition.sh heal: exit 1"]
    report = soak.verdict(healed, tmp_path / "soak.json", tmp_path / "soak.png")
    assert report["problems"] == [
        "planned faults with no record (never started): [2]",
        "interrupted (Ctrl-C or SIGTERM): the schedule did not run to its end",
        "final heal: steps of the heal failed: ['firewall: partition.sh heal: exit 1']",
    ]
    assert not report["ok"]
    assert report["lost"] == 0
    assert deleted == []  # the topic stays for a look when the verdict fails
    assert verify.verify(soak.workdir)["problems"] == report["problems"]  # judged again: the same verdict


def test_a_fault_the_final_heal_could_not_undo_and_what_it_left_behind_fail_the_verdict(judged, tmp_path):
    soak, healed, deleted = judged
    healed["undone"] = {1: {"error": "dc2: dc_recovery.yml failed (log dc_recovery.json)"}}
    healed["heal"]["left_behind"] = {"throttle": {"topic soak-x": {"leader.replication.throttled.replicas": "*"}}}
    report = soak.verdict(healed, tmp_path / "soak.json", tmp_path / "soak.png")
    assert report["problems"] == [
        "faults the final heal could not undo: {'1': 'dc2: dc_recovery.yml failed (log dc_recovery.json)'}",
        "final heal: left behind after the heal (dc_recovery.yml puts these right): {'throttle': {'topic soak-x': "
        "{'leader.replication.throttled.replicas': '*'}}}",
    ]
    assert not report["ok"]
    assert deleted == []


def test_a_heal_between_faults_that_leaves_a_problem_wedges_the_run(soak, monkeypatch):
    soak.tb.wait_healthy = lambda timeout: {"passed": False, "problems": ["under-replicated"], "waited": 600.0}
    healed = {"healthy": {"passed": True, "problems": []}, "errors": ["recovery of dc2: dc_recovery.yml failed"]}
    monkeypatch.setattr(faults, "heal", lambda tb, volumes, timeout: healed)
    soak.settle()
    assert soak.wedged == {"problems": [f"steps of the heal failed: {healed['errors']}"], "heal": healed}


def test_a_probe_never_started_is_not_stopped_and_one_that_failed_gives_its_error():
    notes = []
    assert run.stop_sampler(None) is None
    assert run.stop_sampler(Probe(notes)) is None
    assert notes == []
    failed = Probe(notes)
    failed.start()
    failed.stop = lambda: (_ for _ in ()).throw(RuntimeError("the RTT probe failed: podman: no such container"))
    assert run.stop_sampler(failed) == {"error": "the RTT probe failed: podman: no such container"}


class WanState:
    """A stand-in for testkit.wan.control.State: the links configured, the delayer's report, its supervisor."""

    def __init__(self):
        self.link = Link(src="dc1", dst="dc2", delay_ms=15.0)
        self.configured, self.supervisor, self.pid, self.age = True, 31, 77, 0.5
        self.current = True  # whether the report's pid is the running supervisor's child

    def links(self):
        if not self.configured:
            raise RuntimeError("no WAN on this testbed: testbed/dist/wan/config.json is missing")
        return [self.link]

    def stats(self):
        delayed = {"delay_ms": 15.0, "jitter_ms": 0.0, "rate_mbit": 0.0}
        return {"pid": self.pid, "monotonic": time.monotonic() - self.age, "links": {"dc1>dc2": delayed}}

    def supervisor_pid(self):
        return self.supervisor

    def report_is_current(self, stats):
        return self.current and stats["pid"] == self.pid


def test_the_wan_is_on_with_its_supervisor_and_a_fresh_report_of_the_configured_links():
    state = WanState()
    assert run.wan_state(state) == {"on": True, "links": [state.link.as_dict()], "delayer_pid": 77}
    state.age = 6.0
    assert run.wan_state(state)["why"] == "the delayer's report is missing, stale, or not of the configured links"
    state.age, state.link = 0.5, Link(src="dc1", dst="dc2", delay_ms=50.0)
    assert not run.wan_state(state)["on"]
    state.link, state.current = Link(src="dc1", dst="dc2", delay_ms=15.0), False
    assert run.wan_state(state)["why"] == "the delayer's report is from a process the supervisor no longer runs"
    state.supervisor = None
    assert run.wan_state(state)["why"] == "the delayer's supervisor is not running"
    state.configured = False
    missing = "no WAN on this testbed: testbed/dist/wan/config.json is missing"
    assert run.wan_state(state) == {"on": False, "links": [], "delayer_pid": None, "why": missing}


def test_the_wan_watch_counts_checks_that_found_it_off_and_every_delayer_it_saw():
    state = WanState()
    watch = run.WanWatch(interval=5.0, state=state)
    watch.sample()
    state.age = 30.0  # the delayer died: its report stops
    watch.sample()
    state.age, state.pid = 0.5, 78  # its supervisor started another
    watch.sample()
    found = watch.summary()
    assert (found["checks"], found["off"], found["delayer_pids"]) == (3, 1, [77, 78])
    assert found["off_examples"][0]["why"].startswith("the delayer's report is missing, stale")


def test_a_hard_interruption_of_the_command_names_the_heal(monkeypatch, capsys):
    from testkit.soak import cli as command  # noqa: PLC0415  the command line only here

    monkeypatch.setattr(command, "main", lambda argv=None: (_ for _ in ()).throw(KeyboardInterrupt))
    assert command.interrupted_main([]) == 130
    assert "make soak-heal" in capsys.readouterr().err
