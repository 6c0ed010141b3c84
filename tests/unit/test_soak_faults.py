"""The soak's faults against a stand-in testbed: what each injects and undoes, in which order, and that undo is safe
to repeat; the data volume of disk-full through every state an interrupted run can leave."""

import re

import pytest

from testkit.soak import faults, verify
from testkit.soak.faults import FaultError, Volume
from testkit.soak.schedule import Topology

TOPO = Topology(
    broker_dcs=("dc1", "dc2"),
    tiebreaker="dc3",
    brokers={"dc1": ("dc1-broker1", "dc1-broker2"), "dc2": ("dc2-broker1", "dc2-broker2")},
    controllers={"dc1": ("dc1-controller",), "dc2": ("dc2-controller",), "dc3": ("dc3-controller",)},
)
DATA = "/var/lib/kafka/data"
LOWER, COPY = "/var/lib/kafka/.soak-lower-data", "/var/lib/kafka/.soak-copy-data"
MARK = f"{DATA}/.soak-volume"
CAPACITY = 10 * 1024 * 1024


class Container:
    """A node's files as far as the volume's commands touch them: paths on its disk, and a tmpfs over DATA."""

    def __init__(self):
        self.disk = {DATA: "data-v1"}  # path -> contents ("" is an empty directory)
        self.tmpfs = None  # the contents of the tmpfs mounted at DATA, when one is
        self.filled = False

    def view(self, path):
        return self.tmpfs if path == DATA and self.tmpfs is not None else self.disk.get(path)

    def exists(self, path):
        return self.view(path) is not None


class FakeTestbed:
    def __init__(self, leader="dc2-controller", fail_on=None):
        self.topology, self.calls = TOPO, []
        self.leader, self.fail_on = leader, fail_on
        self.nodes = {}
        self.active = {n: True for n in [*TOPO.all_brokers, *TOPO.all_controllers]}
        self.left = {}  # what left_behind() reads: the throttle, a relaxed min ISR
        self.recovery = "clears"  # what dc_recovery.yml does: "clears" what is left, "leaves" it, or "fails"
        # Each node's kafka JVM (its pid, 0 when none) and each process's state; the signals a JVM ignores (a
        # process in the kernel's uninterruptible sleep, say).
        self.jvm, self.procs, self.ignores, self.next_pid = {}, {}, set(), 100
        # The host's cut: None when healed, else the packets each of its rules dropped.
        self.cut, self.matches_nothing, self.heal_fails = None, False, False
        for n in self.active:
            self._started(n)

    def node(self, name):
        return self.nodes.setdefault(name, Container())

    def _started(self, node):
        if not self.jvm.get(node):
            self.jvm[node], self.next_pid = self.next_pid, self.next_pid + 1
            self.procs[self.jvm[node]] = "S"
        self.active[node] = True

    def _gone(self, node, restarted):
        self.procs.pop(self.jvm.get(node), None)
        self.jvm[node] = 0
        self.active[node] = False
        if restarted:  # Restart=on-failure
            self._started(node)

    def _signal(self, node, signal):
        pid = self.jvm.get(node)
        if not pid or signal in self.ignores:
            return
        if signal == "SIGKILL":
            self._gone(node, restarted=True)
        elif signal == "SIGSTOP":
            self.procs[pid] = "T"
        elif signal == "SIGCONT":
            self.procs[pid] = "S"

    def _call(self, node, words):
        self.calls.append((node, words))
        if self.fail_on and re.search(self.fail_on, f"{node} {words}"):
            self.fail_on = None  # fail once, as an interruption would
            raise FaultError(f"injected failure at {words}")

    # -- what the faults call --
    def exec(self, node, *cmd, timeout=60, check=True):
        words = " ".join(map(str, cmd))
        self._call(node, words)
        c = self.node(node)
        if cmd[:2] == ("findmnt", "--noheadings"):
            return "tmpfs" if cmd[-1] == DATA and c.tmpfs is not None else ""
        if cmd[0] == "mv":
            src, dst = cmd[1], cmd[2]
            assert not (src == DATA and c.tmpfs is not None), "mv of a mountpoint"
            assert c.exists(src), words
            assert not c.exists(dst), words
            c.disk[dst] = c.disk.pop(src)
        elif cmd[0] == "mkdir":
            assert not c.exists(cmd[1])
            c.disk[cmd[1]] = ""
        elif cmd == ("touch", MARK):
            if c.tmpfs is not None:
                c.tmpfs += "+mark"
            else:
                c.disk[DATA] += "+mark"
        elif cmd[:2] == ("systemctl", "stop"):
            self._gone(node, restarted=False)
        elif cmd[:2] == ("systemctl", "start"):
            self._started(node)
        elif cmd[:2] == ("systemctl", "is-active"):
            return "active" if self.active[node] else "inactive"
        elif cmd[:2] == ("systemctl", "kill"):
            self._signal(node, cmd[-2].split("=")[1])
        elif cmd[:3] == ("systemctl", "show", "-p"):
            return str(self.jvm.get(node, 0))
        elif cmd[:2] == ("sed", "-n") and cmd[-1].startswith("/proc/"):
            return self.procs.get(int(cmd[-1].split("/")[2]), "")
        elif cmd[0] == "rm" and cmd[-1].endswith(faults.FILLER):
            c.filled = False
        return ""

    def sh(self, node, script, timeout=60, check=True):
        self._call(node, script)
        c = self.node(node)
        if "cmdline" in script:
            return "/etc/kafka/server.properties"
        if script.startswith("sed -n 's/^log\\.dirs=//p'"):
            return DATA
        if script.startswith("du -sb"):
            return "1000"
        if script.startswith("df -B1"):
            return "0" if c.filled else str(CAPACITY)
        if script.startswith("fallocate"):
            c.filled = True
        for src, _ in re.findall(r"cp -a (\S+)/\. (\S+)/", script):
            c.tmpfs = c.view(src)
        for src, dst in re.findall(r"cp -a (\S+) (\S+)$", script):
            c.disk[dst] = c.view(src)
        if script.startswith("rm -f") and "cp -a" in script:
            c.filled = False
        elif script.startswith("rm -rf"):
            for path in script.split(" && ")[0].split()[2:]:
                c.disk.pop(path, None)
            if f"rm -f {MARK}" in script and c.exists(DATA):
                c.disk[DATA] = c.disk[DATA].replace("+mark", "")
        if "kill --signal=SIGKILL kafka; systemctl stop kafka" in script and "SIGKILL" not in self.ignores:
            self._gone(node, restarted=False)
        return ""

    def test(self, node, *cmd, timeout=60):
        self._call(node, " ".join(cmd))
        c = self.node(node)
        if cmd == ("test", "-e", MARK):
            return "+mark" in (c.view(DATA) or "")
        if cmd[:2] == ("test", "-e"):
            return c.exists(cmd[2])
        if cmd[0] == "rmdir":
            if c.tmpfs is None and c.disk.get(cmd[1]) == "":
                del c.disk[cmd[1]]
                return True
            return False
        raise AssertionError(cmd)

    def in_mounts(self, node, *cmd, timeout=60):
        self._call(node, " ".join(cmd))
        c = self.node(node)
        if cmd[0] == "mount":
            assert c.disk.get(cmd[-1]) == "", "mount over a missing or full directory"
            assert c.tmpfs is None, "mount over a mount"
            c.tmpfs = ""
        elif cmd[0] == "umount":
            assert c.tmpfs is not None
            c.tmpfs = None
        return ""

    def partition(self, *args):
        """partition.sh: a cut's rules drop the DCs' packets (or none: self.matches_nothing), heal removes them
        (or not: self.heal_fails silently); counters reads them."""
        if args == ("counters",):
            return "healed" if self.cut is None else "\n".join(str(n) for n in self.cut)
        self.calls.append(("host", "partition.sh " + " ".join(args)))
        if args[0] == "heal":
            self.cut = self.cut if self.heal_fails else None
        else:
            self.cut = [0 if self.matches_nothing else 17, 0]
        return "ok"

    def playbook(self, name, timeout=1800, **extra):
        self.calls.append(("host", f"{name}.yml {sorted(extra.items())}"))
        dc = extra.get("kafka_ops_failover_dc")
        nodes = [*TOPO.controllers.get(dc, ()), *TOPO.brokers.get(dc, ())]
        for n in nodes if name == "dc_failover" and "SIGKILL" not in self.ignores else ():
            self._gone(n, restarted=False)
        for n in nodes if name == "dc_recovery" else ():
            self._started(n)
        if name == "dc_recovery" and self.recovery == "clears":
            self.left = {}
        ok = not (name == "dc_recovery" and self.recovery == "fails")
        return {"playbook": name, "ok": ok, "seconds": 1.0, "log": f"{name}.json", "stats": {}}

    def quorum_leader(self):
        if self.leader is None:
            raise FaultError("no controller leads the quorum now")
        return self.leader

    def quorum_led(self):
        return True

    def left_behind(self):
        self.calls.append(("host", "read what is left"))
        if isinstance(self.left, Exception):
            raise self.left
        return self.left

    def wait_healthy(self, timeout):
        self.calls.append(("host", "wait healthy"))
        return {"passed": True, "problems": [], "waited": 0.0}

    def commands(self, node=None):
        return [words for n, words in self.calls if node is None or n == node]


def started(tb, node):
    return tb.commands(node)[-3:] == [
        "systemctl kill --signal=SIGCONT kafka",
        "systemctl reset-failed kafka",
        "systemctl start kafka",
    ]


def test_a_broker_kill_is_a_sigkill_systemd_recovers_from_and_undo_starts_it_whatever_its_state():
    tb = FakeTestbed()
    fault = faults.make("broker-kill", "dc1-broker2")
    pid = tb.jvm["dc1-broker2"]
    assert fault.inject(tb) == {"node": "dc1-broker2", "killed_pid": pid}
    assert tb.commands("dc1-broker2") == [
        "systemctl show -p MainPID --value kafka",
        "systemctl kill --signal=SIGKILL kafka",
        f"sed -n s/^State:[[:space:]]*//p /proc/{pid}/status",  # gone: confirmed
    ]
    fault.undo(tb)
    fault.undo(tb)
    assert started(tb, "dc1-broker2")
    assert tb.commands("dc1-broker1") == []


def test_a_controller_kill_of_the_active_one_kills_whichever_leads_when_it_starts():
    tb = FakeTestbed(leader="dc2-controller")
    fault = faults.make("controller-kill", "active")
    assert fault.inject(tb)["node"] == "dc2-controller"
    assert "systemctl kill --signal=SIGKILL kafka" in tb.commands("dc2-controller")
    fault.undo(tb)
    assert started(tb, "dc2-controller")
    assert not any(tb.commands(c) for c in ("dc1-controller", "dc3-controller"))


def test_an_active_controller_kill_that_never_started_undoes_every_controller_and_no_leader_is_an_error():
    tb = FakeTestbed(leader=None)
    fault = faults.make("controller-kill", "active")
    with pytest.raises(FaultError, match="no controller leads"):
        fault.inject(tb)
    fault.undo(tb)
    assert all(started(tb, c) for c in TOPO.all_controllers)


def test_a_pause_stops_the_jvm_only_and_undo_resumes_it_even_twice():
    tb = FakeTestbed()
    fault = faults.make("broker-pause", "dc2-broker1")
    pid = tb.jvm["dc2-broker1"]
    assert fault.inject(tb) == {"node": "dc2-broker1", "paused_pid": pid}
    assert tb.commands("dc2-broker1")[1:] == [
        "systemctl kill --kill-whom=main --signal=SIGSTOP kafka",
        f"sed -n s/^State:[[:space:]]*//p /proc/{pid}/status",  # T: stopped, confirmed
    ]
    assert tb.procs[pid] == "T"
    fault.undo(tb)
    fault.undo(tb)
    assert tb.commands("dc2-broker1")[-2:] == ["systemctl kill --signal=SIGCONT kafka"] * 2


def test_a_dc_loss_runs_the_operators_playbooks_killing_then_recovering_without_the_smoke_test():
    tb = FakeTestbed()
    fault = faults.make("dc-loss", "dc2")
    fault.inject(tb)
    fault.undo(tb)
    failover, recovery = tb.commands("host")
    assert all("systemctl is-active kafka" in tb.commands(n) for n in ("dc2-controller", "dc2-broker1"))
    assert failover.startswith("dc_failover.yml")
    assert "('kafka_ops_failover_dc', 'dc2')" in failover
    assert "('kafka_ops_failover_mode', 'kill')" in failover
    assert recovery.startswith("dc_recovery.yml")
    assert "('kafka_ops_recovery_smoke_test', False)" in recovery


@pytest.fixture
def quick(monkeypatch):
    """A confirmation given up on after a moment, not after CONFIRM_TIMEOUT_S."""
    monkeypatch.setattr(faults, "CONFIRM_TIMEOUT_S", 0.3)


@pytest.mark.parametrize(
    ("kind", "target", "signal", "failure"),
    [
        ("broker-kill", "dc1-broker1", "SIGKILL", r"dc1-broker1: kafka's JVM \(pid \d+\) still ran 0.3 s later"),
        ("controller-kill", "active", "SIGKILL", r"dc2-controller: kafka's JVM \(pid \d+\) still ran 0.3 s later"),
        ("broker-pause", "dc1-broker1", "SIGSTOP", r"dc1-broker1: kafka's JVM \(pid \d+\) was not stopped 0.3 s later"),
        ("two-dcs-lost", "dc2+dc3", "SIGKILL", r"dc2-controller: kafka still ran 0.3 s later"),
        ("dc-loss", "dc2", "SIGKILL", r"dc2: dc_failover.yml passed, and kafka still runs on \['dc2-controller', "),
    ],
)  # fmt: skip
def test_a_fault_not_seen_to_take_effect_is_an_error(quick, kind, target, signal, failure):
    tb = FakeTestbed()
    tb.ignores.add(signal)
    with pytest.raises(FaultError, match=failure):
        faults.make(kind, target).inject(tb)


@pytest.mark.parametrize(("kind", "fault"), [("broker-kill", "kill"), ("broker-pause", "pause")])
def test_a_kill_or_a_pause_of_a_broker_not_running_is_an_error(kind, fault):
    tb = FakeTestbed()
    tb.jvm["dc1-broker1"] = 0
    with pytest.raises(FaultError, match=f"dc1-broker1: kafka is not running, so there is nothing to {fault}"):
        faults.make(kind, "dc1-broker1").inject(tb)
    assert "systemctl kill" not in " ".join(tb.commands("dc1-broker1"))


@pytest.mark.parametrize(
    ("kind", "target", "cut"),
    [
        ("cut", "dc1<>dc2", "partition.sh cut dc1 dc2"),
        ("oneway", "dc2>dc1", "partition.sh oneway dc2 dc1"),
        ("tiebreaker-isolated", "dc3", "partition.sh isolate dc3"),
    ],
)
def test_network_faults_cut_on_the_host_and_heal(kind, target, cut):
    tb = FakeTestbed()
    fault = faults.make(kind, target)
    fault.inject(tb)
    fault.undo(tb)
    fault.undo(tb)
    assert tb.commands("host") == [cut, "partition.sh heal", "partition.sh heal"]


@pytest.mark.parametrize(
    ("kind", "target", "cut"),
    [("cut", "dc1<>dc2", "cut dc1 dc2"), ("oneway", "dc2>dc1", "oneway dc2 dc1"),
     ("tiebreaker-isolated", "dc3", "isolate dc3")],
)  # fmt: skip
def test_a_cut_whose_rules_drop_nothing_is_an_error(quick, kind, target, cut):
    # nft takes a rule that matches no packet (a wrong subnet, traffic that does not pass the host) and
    # partition.sh exits 0: the cut is taken as in place only once its rules are seen dropping the DCs' packets.
    tb = FakeTestbed()
    tb.matches_nothing = True
    with pytest.raises(FaultError, match=re.escape(f"{target}: partition.sh {cut} dropped no packet 0.3 s later")):
        faults.make(kind, target).inject(tb)


def test_a_heal_that_leaves_the_cut_in_place_is_an_error(quick):
    tb = FakeTestbed()
    fault = faults.make("cut", "dc1<>dc2")
    fault.inject(tb)
    tb.heal_fails = True
    with pytest.raises(FaultError, match=re.escape("partition.sh heal left the cut in place 0.3 s later")):
        fault.undo(tb)


def test_a_rolling_restart_is_the_playbook_for_one_dc_and_undo_starts_that_dcs_nodes():
    tb = FakeTestbed()
    fault = faults.make("rolling-restart", "dc1")
    fault.inject(tb)
    (run,) = tb.commands("host")
    assert run.startswith("rolling_restart.yml")
    assert "('kafka_ops_restart_dcs', ['dc1'])" in run
    assert "('kafka_ops_restart_smoke_test', False)" in run
    fault.undo(tb)
    assert all(started(tb, n) for n in ("dc1-controller", "dc1-broker1", "dc1-broker2"))
    assert not tb.commands("dc2-broker1")


def test_two_dcs_lost_takes_the_controllers_down_first_and_brings_them_back_first():
    tb = FakeTestbed()
    fault = faults.make("two-dcs-lost", "dc2+dc3")
    assert not fault.in_model
    fault.inject(tb)
    kills = [n for n, words in tb.calls if "SIGKILL" in words]
    assert sorted(kills[:2]) == ["dc2-controller", "dc3-controller"]
    assert sorted(kills[2:]) == ["dc2-broker1", "dc2-broker2"]
    assert not any(tb.active[n] for n in kills)
    tb.calls.clear()
    fault.undo(tb)
    starts = [n for n, words in tb.calls if words == "systemctl start kafka"]
    assert sorted(starts[:2]) == ["dc2-controller", "dc3-controller"]
    assert sorted(starts[2:]) == ["dc2-broker1", "dc2-broker2"]
    assert tb.commands("host")[-1].startswith("dc_recovery.yml")
    assert "('kafka_ops_failover_dc', 'dc2')" in tb.commands("host")[-1]


def test_a_full_disk_needs_the_volume_fills_it_and_undo_empties_it_and_starts_the_broker():
    tb = FakeTestbed()
    fault = faults.make("disk-full", "dc1-broker1")
    with pytest.raises(FaultError, match="not on the soak's data volume"):
        fault.inject(tb)
    Volume("dc1-broker1").make(tb)
    found = fault.inject(tb)
    assert found["filled_bytes"] == CAPACITY
    assert found["left_bytes"] == 0
    assert tb.node("dc1-broker1").filled
    fault.undo(tb)
    assert not tb.node("dc1-broker1").filled
    assert started(tb, "dc1-broker1")


def test_a_fill_that_leaves_space_is_an_error():
    tb = FakeTestbed()
    Volume("dc1-broker1").make(tb)
    tb.sh = lambda node, script, **kw: str(CAPACITY) if script.startswith("df") else FakeTestbed.sh(tb, node, script)
    with pytest.raises(FaultError, match="still free"):
        faults.make("disk-full", "dc1-broker1").inject(tb)


def test_the_volume_carries_the_brokers_data_there_and_back():
    tb = FakeTestbed()
    volume = Volume("dc1-broker1")
    made = volume.make(tb)
    c = tb.node("dc1-broker1")
    assert made["size_bytes"] == 1000 + faults.VOLUME_HEADROOM
    assert c.tmpfs == "data-v1+mark"
    assert c.disk[LOWER] == "data-v1"
    assert volume.make(tb)["made"] is False  # made once
    c.tmpfs = "data-v2+mark"  # the broker wrote on
    assert volume.restore(tb)["from"] == COPY
    assert c.tmpfs is None
    assert c.disk == {DATA: "data-v2"}
    assert started(tb, "dc1-broker1")
    assert volume.restore(tb) == {"node": "dc1-broker1", "restored": False}


@pytest.mark.parametrize("interrupted_at", ["mv /var/lib/kafka/data", "mkdir", "^dc1-broker1 mount", "cp -a", "touch"])
def test_a_volume_made_halfway_is_put_back_at_once(interrupted_at):
    tb = FakeTestbed(fail_on=interrupted_at)
    with pytest.raises(FaultError):
        Volume("dc1-broker1").make(tb)
    c = tb.node("dc1-broker1")
    assert c.tmpfs is None
    assert c.disk == {DATA: "data-v1"}
    assert tb.active["dc1-broker1"]


@pytest.mark.parametrize(
    "interrupted_at",
    ["cp -a /var/lib/kafka/data ", "umount", "rmdir", "mv /var/lib/kafka/.soak", "broker1 rm -rf /var/lib"],
)
def test_a_restore_interrupted_anywhere_is_finished_by_the_next_one_with_the_newest_data(interrupted_at):
    tb = FakeTestbed()
    volume = Volume("dc1-broker1")
    volume.make(tb)
    c = tb.node("dc1-broker1")
    c.tmpfs = "data-v2+mark"
    tb.fail_on = interrupted_at
    with pytest.raises(FaultError):
        volume.restore(tb)
    volume.restore(tb)
    assert c.tmpfs is None
    assert c.disk == {DATA: "data-v2"}


def test_a_volume_lost_with_its_container_gives_the_renamed_log_dir_back():
    tb = FakeTestbed()
    volume = Volume("dc1-broker1")
    volume.make(tb)
    c = tb.node("dc1-broker1")
    c.tmpfs = None  # the container restarted: the tmpfs is gone, the empty mountpoint is left
    restored = volume.restore(tb)
    assert restored["from"] == LOWER
    assert restored["maybe_stale"]
    assert c.disk == {DATA: "data-v1"}


def test_a_restore_that_finds_something_else_at_the_log_dirs_path_stops_and_removes_nothing():
    tb = FakeTestbed()
    volume = Volume("dc1-broker1")
    volume.make(tb)
    c = tb.node("dc1-broker1")
    c.tmpfs = None
    c.disk[DATA] = "something else"
    with pytest.raises(FaultError, match="move it back by hand"):
        volume.restore(tb)
    assert c.disk[LOWER] == "data-v1"


def test_heal_takes_every_fault_off_and_recovers_a_dc_that_had_a_node_down():
    tb = FakeTestbed()
    Volume("dc2-broker2").make(tb)
    faults.make("disk-full", "dc2-broker2").inject(tb)
    tb.active["dc2-broker1"] = False
    tb.calls.clear()
    done = faults.heal(tb)
    assert done["down"] == ["dc2-broker1"]
    assert tb.commands("host")[0] == "partition.sh heal"
    assert all(started(tb, n) or "systemctl start kafka" in tb.commands(n) for n in TOPO.all_brokers)
    assert tb.node("dc2-broker2").tmpfs is None
    assert done["volumes_restored"] == ["dc2-broker2"]
    assert any(c.startswith("dc_recovery.yml") and "'dc2'" in c for c in tb.commands("host"))
    assert "errors" not in done
    starts = [n for n, words in tb.calls if words == "systemctl start kafka"]
    assert starts[:3] == TOPO.all_controllers


THROTTLE = {"throttle": {"cluster-wide": {"leader.replication.throttled.rate": "1048576"}}}
RELAXED = {"min_insync_replicas": {"declared": 2, "cluster_wide": "1"}}


def test_heal_removes_a_throttle_left_behind_and_notes_a_step_that_failed():
    tb = FakeTestbed(fail_on="dc1-broker1 rm -f")
    tb.left = THROTTLE
    done = faults.heal(tb)
    assert any(c.startswith("dc_recovery.yml") and "'dc1'" in c for c in tb.commands("host"))
    assert done["errors"] == ["filler: injected failure at rm -f /var/lib/kafka/data/.soak-filler"]
    assert all("systemctl start kafka" in tb.commands(n) for n in TOPO.all_brokers)
    assert verify.heal_problems(done) == [f"steps of the heal failed: {done['errors']}"]


@pytest.mark.parametrize("left", [THROTTLE, RELAXED])
def test_heal_recovers_what_a_recovery_cut_short_left_and_reads_it_again_after(left):
    tb = FakeTestbed()
    tb.left = left
    done = faults.heal(tb)
    assert done["left_before_recovery"] == left
    assert tb.commands("host")[-3:][0].startswith("dc_recovery.yml")
    assert tb.commands("host")[-2:] == ["wait healthy", "read what is left"]
    assert done["left_behind"] == {}
    assert verify.heal_problems(done) == []


@pytest.mark.parametrize("left", [THROTTLE, RELAXED, {**THROTTLE, **RELAXED}])
def test_a_throttle_or_a_relaxed_min_isr_still_there_after_the_heal_is_a_problem(left):
    tb = FakeTestbed()
    tb.left, tb.recovery = left, "leaves"
    done = faults.heal(tb)
    assert done["left_behind"] == left
    assert verify.heal_problems(done) == [f"left behind after the heal (dc_recovery.yml puts these right): {left}"]


def test_a_recovery_that_fails_in_the_heal_is_a_problem_and_the_heal_goes_on():
    tb = FakeTestbed()
    tb.active["dc2-broker1"] = False
    tb.recovery = "fails"
    done = faults.heal(tb)
    assert done["errors"] == ["recovery of dc2: dc2: dc_recovery.yml failed (log dc_recovery.json)"]
    assert "recovered" not in done
    assert tb.commands("host")[-2:] == ["wait healthy", "read what is left"]
    assert verify.heal_problems(done) == [f"steps of the heal failed: {done['errors']}"]


def test_what_is_left_unread_is_a_problem_never_nothing_left():
    tb = FakeTestbed()
    tb.left = faults.FaultError("broker 201 is fenced: its throttle rates cannot be read")
    done = faults.heal(tb)
    assert done["left_behind"] is None
    assert verify.heal_problems(done) == [
        "steps of the heal failed: ['reading the throttle and min.insync.replicas: broker 201 is fenced: its "
        "throttle rates cannot be read']"
    ]


def test_a_heal_that_leaves_the_cluster_not_whole_is_a_problem():
    tb = FakeTestbed()
    tb.wait_healthy = lambda timeout: {"passed": False, "problems": ["broker 201 fenced"], "waited": 600.0}
    assert verify.heal_problems(faults.heal(tb)) == ["not whole after the heal: ['broker 201 fenced']"]


def test_a_dc_recovery_that_fails_is_a_fault_not_undone():
    tb = FakeTestbed()
    tb.recovery = "fails"
    with pytest.raises(FaultError, match=r"dc2: dc_recovery.yml failed \(log dc_recovery.json\)"):
        faults.make("dc-loss", "dc2").undo(tb)
    with pytest.raises(FaultError, match="dc_recovery.yml failed"):
        faults.make("two-dcs-lost", "dc2+dc3").undo(tb)


def test_heal_goes_on_when_the_firewall_cannot_be_healed_and_says_so():
    tb = FakeTestbed()

    def refused(*args):
        raise FaultError("partition.sh heal: exit 1: nft: permission denied")

    tb.partition = refused
    done = faults.heal(tb)
    assert done["errors"] == ["firewall: partition.sh heal: exit 1: nft: permission denied"]
    assert "firewall" not in done
    assert all("systemctl start kafka" in tb.commands(n) for n in [*TOPO.all_controllers, *TOPO.all_brokers])
    assert done["healthy"]["passed"]


def test_every_kind_has_a_default_target_and_an_unknown_kind_is_refused():
    for kind in faults.FAULTS:
        assert faults.default_target(kind, TOPO)
    with pytest.raises(FaultError, match="unknown fault 'meteor'"):
        faults.make("meteor", "dc1")


def test_the_final_heal_says_so_when_the_cut_stays_in_place(quick):
    tb = FakeTestbed()
    faults.make("cut", "dc1<>dc2").inject(tb)
    tb.heal_fails = True
    done = faults.heal(tb)
    assert done["errors"] == ["firewall: partition.sh heal left the cut in place 0.3 s later"]
