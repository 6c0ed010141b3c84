"""The soak's faults, each injected and undone on the running testbed, each runnable alone.

Every fault is a small class: inject(testbed) puts it on, confirms it took
effect (a killed JVM gone, a paused one stopped, a lost DC's nodes down:
FaultError otherwise) and returns what it did (the resolved target, the
process, the playbook's figures), undo(testbed) takes it off. Undo is
idempotent: it is safe on a fault that was never injected, was injected
twice, or was half undone, because the soak's `finally` and
`python -m testkit.soak heal` call it whatever happened before.

The testbed is reached as an operator on its host would: `podman exec` into
a node's container (systemd runs kafka.service there), the node's mount
namespace for its data volume (nsenter), the host's firewall between the
DCs' networks (testbed/partition.sh), and the playbooks of this repository.
"""

from __future__ import annotations

import contextlib
import shlex
import subprocess
import time

from ansible_collections.stretch.kafka.plugins.module_utils import gates
from testkit import REPO
from testkit.cluster import left_after_recovery, playbook, read_quorum

from .schedule import KINDS

PARTITION = REPO / "testbed/partition.sh"
FILLER = ".soak-filler"  # the file that fills a broker's data volume (Kafka loads only directories there)
VOLUME_HEADROOM = 512 * 1024 * 1024  # the data volume's free space, beyond the log dir's size when it is made
VOLUME_LOWER = ".soak-lower"  # the log dir's own directory while the volume covers it (name prefix, beside it)
VOLUME_COPY = ".soak-copy"  # the volume's contents copied back, before they replace the log dir
VOLUME_MARK = ".soak-volume"  # in the log dir once the volume holds its data (Kafka loads only directories there)
CONFIRM_TIMEOUT_S = 10  # for a signal to take effect, and a node stopped to be seen down


class FaultError(RuntimeError):
    pass


class Testbed:
    """How the faults reach the testbed. Every call is bounded in time; a failed command raises FaultError."""

    def __init__(self, cluster, topology, log_dir):
        self.cluster, self.topology, self.log_dir = cluster, topology, log_dir

    def host(self, *cmd, timeout=60, check=True):
        try:
            proc = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise FaultError(f"{shlex.join(str(c) for c in cmd)}: no answer in {timeout} s") from exc
        if check and proc.returncode != 0:
            raise FaultError(f"{shlex.join(str(c) for c in cmd)}: exit {proc.returncode}: "
                             f"{(proc.stderr or proc.stdout).strip()[-500:]}")  # fmt: skip
        return proc.stdout.strip()

    def exec(self, node, *cmd, timeout=60, check=True):
        """A command in a node's container (its inventory name is the container's)."""
        return self.host("podman", "exec", node, *cmd, timeout=timeout, check=check)

    def sh(self, node, script, timeout=60, check=True):
        return self.exec(node, "sh", "-c", script, timeout=timeout, check=check)

    def test(self, node, *cmd, timeout=60):
        """Whether a command in a node's container exits 0."""
        try:
            proc = subprocess.run(["podman", "exec", node, *map(str, cmd)], capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise FaultError(f"podman exec {node} {shlex.join(map(str, cmd))}: no answer in {timeout} s") from exc
        return proc.returncode == 0

    def in_mounts(self, node, *cmd, timeout=60):
        """A command in the node's mount namespace with the host's privileges: what mounting there needs."""
        pid = self.host("podman", "inspect", "--format", "{{.State.Pid}}", node)
        if not pid.isdigit() or int(pid) <= 0:
            raise FaultError(f"{node}: not running (podman inspect gave pid {pid!r})")
        return self.host("nsenter", "--target", pid, "--mount", "--", *cmd, timeout=timeout)

    def partition(self, *args):
        return self.host(PARTITION, *args, timeout=30)

    def playbook(self, name, timeout=1800, **extra):
        run = playbook(self.cluster, name, log_dir=self.log_dir, timeout=timeout, **extra)
        return {"playbook": name, "ok": run.ok, "seconds": run.seconds, "log": run.log, "stats": run.stats}

    def quorum_leader(self):
        """The inventory name of the controller leading the quorum now."""
        errors = []
        quorum = read_quorum(self.cluster, errors)
        leader = (quorum or {}).get("leader", -1)
        for node in self.cluster.controllers:
            if node.node_id == leader:
                return node.host
        raise FaultError(f"no controller leads the quorum now (leader {leader}; {errors[-1:] or 'no error'})")

    def quorum_led(self):
        """Whether a controller answers as the quorum's leader now."""
        quorum = read_quorum(self.cluster)
        return quorum is not None and quorum.get("leader", -1) >= 0

    def left_behind(self):
        """What a recovery cut short leaves: the replication throttle, a relaxed min.insync.replicas
        (testkit.cluster.left_after_recovery); {} when nothing."""
        return left_after_recovery(self.cluster)

    def expected(self):
        return {
            "controllers": {n.node_id: n.dc for n in self.cluster.controllers},
            "brokers": {n.node_id: n.dc for n in self.cluster.brokers},
        }

    def wait_healthy(self, timeout):
        """gates.cluster_healthy on fresh snapshots until it passes or timeout: {passed, problems, waited}."""
        admin = self.cluster.admin(timeout=15)
        try:
            outcome = gates.poll(admin.snapshot, "cluster_healthy", self.expected(), timeout=timeout)
        finally:
            admin.close()
        return {k: outcome[k] for k in ("passed", "problems", "waited")}


# -- what several faults do to a node's kafka service ---------------------------


def main_pid(tb, node):
    """The process id of the node's kafka service (its JVM) in the container, 0 when none runs."""
    found = tb.exec(node, "systemctl", "show", "-p", "MainPID", "--value", "kafka")
    if not found.isdigit():
        raise FaultError(f"{node}: systemd gave kafka's main process id as {found!r}")
    return int(found)


def running_jvm(tb, node, fault):
    """The kafka JVM's process id, for a fault that needs one running; FaultError when none is."""
    pid = main_pid(tb, node)
    if not pid:
        raise FaultError(f"{node}: kafka is not running, so there is nothing to {fault}")
    return pid


def process_state(tb, node, pid):
    """The state of process pid in the node's container, as /proc has it (R, S, D, T stopped, Z a zombie), or
    None when there is no such process."""
    found = tb.exec(node, "sed", "-n", "s/^State:[[:space:]]*//p", f"/proc/{pid}/status", check=False)
    return found[:1] or None


def confirm(check, failure, interval=0.2):
    """Until check() is true; FaultError(failure) when it is not within CONFIRM_TIMEOUT_S: a fault not seen to
    take effect did not happen as planned."""
    deadline = time.monotonic() + CONFIRM_TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise FaultError(f"{failure} {CONFIRM_TIMEOUT_S} s later")
        time.sleep(interval)


def kill(tb, node):
    """SIGKILL the node's JVM, confirmed gone; Restart=on-failure in kafka.service starts it again after
    RestartSec. Returns the killed process's id."""
    pid = running_jvm(tb, node, "kill")
    tb.exec(node, "systemctl", "kill", "--signal=SIGKILL", "kafka")
    confirm(lambda: process_state(tb, node, pid) in (None, "Z"), f"{node}: kafka's JVM (pid {pid}) still ran")
    return pid


def kill_and_keep_down(tb, node):
    """SIGKILL, then stop, so systemd does not start it again: a node that is gone (as dc_failover.yml does),
    confirmed with no kafka process left."""
    tb.sh(node, "systemctl kill --signal=SIGKILL kafka; systemctl stop kafka", timeout=90)
    confirm(lambda: main_pid(tb, node) == 0 and not is_active(tb, node), f"{node}: kafka still ran")


def ensure_started(tb, node):
    """Running again, whatever state the unit is in: resumed, its failed state cleared, started."""
    tb.exec(node, "systemctl", "kill", "--signal=SIGCONT", "kafka", check=False)
    tb.exec(node, "systemctl", "reset-failed", "kafka", check=False)
    tb.exec(node, "systemctl", "start", "kafka", timeout=120)


def is_active(tb, node):
    return tb.exec(node, "systemctl", "is-active", "kafka", check=False) == "active"


# -- the faults -------------------------------------------------------------------


class Fault:
    kind = ""

    def __init__(self, target):
        self.target = target

    @property
    def in_model(self):
        return KINDS[self.kind].in_model

    def inject(self, tb):
        raise NotImplementedError

    def undo(self, tb):
        raise NotImplementedError

    def __repr__(self):
        return f"{self.kind} {self.target}"


class BrokerKill(Fault):
    kind = "broker-kill"

    def inject(self, tb):
        return {"node": self.target, "killed_pid": kill(tb, self.target)}

    def undo(self, tb):
        ensure_started(tb, self.target)
        return {}


class ControllerKill(Fault):
    """SIGKILL of a controller; the target "active" is whichever leads the quorum when the fault starts."""

    kind = "controller-kill"

    def __init__(self, target):
        super().__init__(target)
        self.node = None if target == "active" else target

    def inject(self, tb):
        self.node = tb.quorum_leader() if self.target == "active" else self.target
        return {"node": self.node, "killed_pid": kill(tb, self.node)}

    def undo(self, tb):
        nodes = [self.node] if self.node else tb.topology.all_controllers
        for node in nodes:
            ensure_started(tb, node)
        return {}


class BrokerPause(Fault):
    """SIGSTOP of the broker's JVM (a stall like a long GC pause), SIGCONT to undo.

    A stop of the unit meanwhile (a rolling restart reaching it) resumes it:
    systemd sends SIGCONT after SIGTERM.
    """

    kind = "broker-pause"

    def inject(self, tb):
        pid = running_jvm(tb, self.target, "pause")
        tb.exec(self.target, "systemctl", "kill", "--kill-whom=main", "--signal=SIGSTOP", "kafka")
        confirm(lambda: process_state(tb, self.target, pid) == "T", f"{self.target}: kafka's JVM (pid {pid}) was "
                "not stopped")  # fmt: skip
        return {"node": self.target, "paused_pid": pid}

    def undo(self, tb):
        tb.exec(self.target, "systemctl", "kill", "--signal=SIGCONT", "kafka", check=False)
        return {}


class DcLoss(Fault):
    """Every node of a broker DC killed, as dc_failover.yml does it (with its check that writes go on), then
    dc_recovery.yml (its smoke test off: the soak's own load and verifier judge the data)."""

    kind = "dc-loss"
    GATE_TIMEOUT = 300

    def inject(self, tb):
        """dc_failover.yml; once it passed, every node of the DC confirmed down (FaultError naming one that is
        not)."""
        run = tb.playbook("dc_failover", kafka_ops_failover_dc=self.target, kafka_ops_failover_mode="kill",
                          kafka_ops_gate_timeout=self.GATE_TIMEOUT)  # fmt: skip
        if run["ok"]:
            nodes = [*tb.topology.controllers.get(self.target, ()), *tb.topology.brokers.get(self.target, ())]
            running = [n for n in nodes if is_active(tb, n)]
            if running:
                raise FaultError(f"{self.target}: dc_failover.yml passed, and kafka still runs on {running}")
        return run

    def undo(self, tb):
        """dc_recovery.yml for the DC; FaultError when it fails: the DC is not known to be back, nor the throttle
        off and min.insync.replicas as declared, so the fault is not undone."""
        run = tb.playbook("dc_recovery", kafka_ops_failover_dc=self.target, kafka_ops_recovery_smoke_test=False,
                          kafka_ops_gate_timeout=2 * self.GATE_TIMEOUT)  # fmt: skip
        failed = playbook_failure(run)
        if failed:
            raise FaultError(f"{self.target}: {failed}")
        return run


def playbook_failure(result):
    """What failed, when result is a playbook run's (Testbed.playbook) that did not pass; else None."""
    if result.get("ok") is False:
        return f"{result['playbook']}.yml failed (log {result['log']})"
    return None


def cut_drops(tb):
    """The packets each rule of the host's cut has dropped (partition.sh counters); None when no cut is in place."""
    found = tb.partition("counters")
    if found.strip() == "healed":
        return None
    counts = found.split()
    if not counts or not all(c.isdigit() for c in counts):
        raise FaultError(f"partition.sh counters gave {found[-200:]!r}, not a count per rule of the cut")
    return [int(c) for c in counts]


class _Cut(Fault):
    """A cut between DCs on the host (testbed/partition.sh, one at a time); undo heals it. nft takes a rule that
    matches no packet and partition.sh exits 0, so the cut is confirmed by its rules dropping the DCs' packets
    (the replication and the quorum's fetches cross between the DCs all the time), and the heal by the cut gone."""

    def cut(self):
        raise NotImplementedError

    def inject(self, tb):
        done = {"firewall": tb.partition(*self.cut())}
        confirm(lambda: sum(cut_drops(tb) or [0]) > 0,
                f"{self.target}: partition.sh {' '.join(self.cut())} dropped no packet")  # fmt: skip
        done["dropped"] = cut_drops(tb)
        return done

    def undo(self, tb):
        return {"firewall": heal_cut(tb)}


def heal_cut(tb):
    """The host's cut removed (partition.sh heal), confirmed gone; what partition.sh said."""
    said = tb.partition("heal")
    confirm(lambda: cut_drops(tb) is None, "partition.sh heal left the cut in place")
    return said


class Cut(_Cut):
    """The broker DCs cut from each other both ways (target "dc1<>dc2"); both still reach the tiebreaker."""

    kind = "cut"

    def cut(self):
        return ("cut", *self.target.split("<>"))


class OneWay(_Cut):
    """Packets from one DC to the other dropped, the reverse flowing (target "dc1>dc2": dc1's packets lost)."""

    kind = "oneway"

    def cut(self):
        return ("oneway", *self.target.split(">"))


class TiebreakerIsolated(_Cut):
    kind = "tiebreaker-isolated"

    def cut(self):
        return ("isolate", self.target)


class DiskFull(Fault):
    """The broker's data volume filled to the last byte; undo removes the filler and starts the broker again.

    Needs the broker's small data volume (Volume), made before the load starts:
    filling the container's own disk would fill the host's.
    """

    kind = "disk-full"

    def inject(self, tb):
        volume = Volume(self.target)
        path = volume.log_dir(tb)
        if not volume.mounted(tb, path):
            raise FaultError(f"{self.target}: {path} is not on the soak's data volume; make it first (Volume.make)")
        free = tb.sh(self.target, f"df -B1 --output=avail {path} | tail -n 1")
        tb.sh(self.target, f"fallocate -l {int(free)} {path}/{FILLER} || dd if=/dev/zero of={path}/{FILLER} "
                           "bs=1M oflag=append conv=notrunc 2>/dev/null || true", timeout=120)  # fmt: skip
        left = int(tb.sh(self.target, f"df -B1 --output=avail {path} | tail -n 1"))
        if left > 1024 * 1024:
            raise FaultError(f"{self.target}: {left} B still free on {path} after filling it")
        return {"node": self.target, "filled_bytes": int(free), "left_bytes": left}

    def undo(self, tb):
        path = Volume(self.target).log_dir(tb)
        tb.exec(self.target, "rm", "-f", f"{path}/{FILLER}")
        ensure_started(tb, self.target)
        return {}


class RollingRestart(Fault):
    """rolling_restart.yml over one DC's nodes (target: the DC), behind its gates; its smoke test off."""

    kind = "rolling-restart"
    GATE_TIMEOUT = 300

    def inject(self, tb):
        return tb.playbook("rolling_restart", kafka_ops_restart_dcs=[self.target],
                           kafka_ops_restart_smoke_test=False, kafka_ops_gate_timeout=self.GATE_TIMEOUT)  # fmt: skip

    def undo(self, tb):
        for node in [*tb.topology.controllers.get(self.target, ()), *tb.topology.brokers.get(self.target, ())]:
            ensure_started(tb, node)
        return {}


class TwoDcsLost(Fault):
    """A broker DC and the tiebreaker lost at once (target "dc2+dc3"): beyond the failure model.

    The controllers go first, so the quorum has no majority before any broker
    is gone: no ISR can shrink and no leader can move, and acks=all writes
    must wait. Undo starts the controllers, then the brokers, and finishes as
    an operator would once the quorum is back: dc_recovery.yml for the broker DC.
    """

    kind = "two-dcs-lost"
    QUORUM_TIMEOUT = 180

    def dcs(self):
        return self.target.split("+")

    def nodes(self, tb, role):
        table = tb.topology.controllers if role == "controller" else tb.topology.brokers
        return [n for dc in self.dcs() for n in table.get(dc, ())]

    def inject(self, tb):
        for role in ("controller", "broker"):
            _each(tb, self.nodes(tb, role), kill_and_keep_down)
        return {"nodes": self.nodes(tb, "controller") + self.nodes(tb, "broker")}

    def undo(self, tb):
        for role in ("controller", "broker"):
            _each(tb, self.nodes(tb, role), ensure_started)
        deadline = time.monotonic() + self.QUORUM_TIMEOUT
        while not tb.quorum_led():
            if time.monotonic() > deadline:
                raise FaultError(f"no quorum leader {self.QUORUM_TIMEOUT} s after starting {self.target} again")
            time.sleep(2)
        broker_dc = next(dc for dc in self.dcs() if dc in tb.topology.broker_dcs)
        return DcLoss(broker_dc).undo(tb)


def _each(tb, nodes, action):
    """action(tb, node) on every node at once (threads), bounded; the first error is raised after all finish."""
    import concurrent.futures  # noqa: PLC0415  only here

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(nodes))) as pool:
        futures = [pool.submit(action, tb, node) for node in nodes]
        errors = [f.exception(timeout=180) for f in futures]
    errors = [e for e in errors if e is not None]
    if errors:
        raise errors[0]


FAULTS = {cls.kind: cls for cls in (BrokerKill, ControllerKill, BrokerPause, DcLoss, Cut, OneWay, TiebreakerIsolated,
                                    DiskFull, RollingRestart, TwoDcsLost)}  # fmt: skip


def make(kind, target):
    if kind not in FAULTS:
        raise FaultError(f"unknown fault {kind!r}; known: {', '.join(sorted(FAULTS))}")
    return FAULTS[kind](target)


def default_target(kind, topology):
    """The target a fault runs against when none is given on the command line."""
    first, second = topology.broker_dcs
    return {
        "broker-kill": topology.brokers[first][0],
        "controller-kill": "active",
        "broker-pause": topology.brokers[first][0],
        "dc-loss": second,
        "cut": f"{first}<>{second}",
        "oneway": f"{first}>{second}",
        "tiebreaker-isolated": topology.tiebreaker,
        "disk-full": topology.brokers[first][0],
        "rolling-restart": first,
        "two-dcs-lost": f"{second}+{topology.tiebreaker}",
    }[kind]


# -- a broker's small data volume, for the disk-full fault --------------------------------


class Volume:
    """A tmpfs of the log dir's size plus VOLUME_HEADROOM, mounted over one broker's log dir, and taken off.

    make(): the broker is stopped (cleanly: its leadership moves first), its
    log dir renamed beside itself, a tmpfs mounted at the log dir's path
    (from the host, in the container's mount namespace) and the data copied
    in; then it starts again. restore(): stopped, the volume's contents copied
    back to the container's disk, the tmpfs unmounted, the copy put in place,
    started. Each step leaves a state the next restore() recognises, so a
    run interrupted anywhere is put back by restore() alone. The tmpfs lives
    as long as the container: kafka restarts keep it, a container restart
    drops it (restore() then puts the renamed log dir back).
    """

    def __init__(self, node):
        self.node = node

    def log_dir(self, tb):
        """The broker's log dir, as its running process was configured (one only)."""
        pid = "$(systemctl show -p MainPID --value kafka)"
        props = tb.sh(self.node, f"tr '\\0' '\\n' < /proc/{pid}/cmdline | tail -n 1", check=False)
        if not props.endswith(".properties"):
            # Not running: the unit's command line names the same file.
            unit = "systemctl show kafka -p ExecStart --value"
            props = tb.sh(self.node, f"{unit} | grep -o '[^ ]*\\.properties' | tail -n 1")
        dirs = tb.sh(self.node, f"sed -n 's/^log\\.dirs=//p' {props}")
        if not dirs or "," in dirs:
            raise FaultError(f"{self.node}: the disk-full fault needs one log dir; {props} has log.dirs={dirs!r}")
        return dirs

    def mounted(self, tb, path):
        return tb.exec(self.node, "findmnt", "--noheadings", "--output", "FSTYPE", path, check=False) == "tmpfs"

    def paths(self, path):
        """(the renamed log dir, the copy on its way back, the marker of the volume's data)."""
        parent, name = path.rstrip("/").rsplit("/", 1)
        return f"{parent}/{VOLUME_LOWER}-{name}", f"{parent}/{VOLUME_COPY}-{name}", f"{path}/{VOLUME_MARK}"

    def make(self, tb):
        path = self.log_dir(tb)
        lower, copy, mark = self.paths(path)
        if self.mounted(tb, path) and tb.test(self.node, "test", "-e", mark):
            return {"node": self.node, "path": path, "made": False}
        if self.mounted(tb, path) or any(tb.test(self.node, "test", "-e", p) for p in (lower, copy, mark)):
            self.restore(tb)  # left over from an interrupted run
        used = int(tb.sh(self.node, f"du -sb {path} | cut -f1"))
        size = used + VOLUME_HEADROOM
        tb.exec(self.node, "systemctl", "stop", "kafka", timeout=180)
        try:
            tb.exec(self.node, "mv", path, lower)
            tb.exec(self.node, "mkdir", path)
            tb.in_mounts(self.node, "mount", "-t", "tmpfs", "-o", f"size={size},mode=0750", "stretch-soak", path)
            tb.sh(self.node, f"cp -a {lower}/. {path}/ && chown --reference={lower} {path} && "
                             f"chmod --reference={lower} {path}", timeout=600)  # fmt: skip
            tb.exec(self.node, "touch", mark)
        except FaultError:
            self.restore(tb)
            ensure_started(tb, self.node)  # stopped above, even when nothing had moved yet
            raise
        ensure_started(tb, self.node)
        return {"node": self.node, "path": path, "made": True, "size_bytes": size, "data_bytes": used}

    def restore(self, tb):
        """The log dir back on the container's disk with the newest data; nothing left of the volume.

        The marker goes into the tmpfs once the data is there, so it travels with the data: whatever
        holds it is the newest copy. What an interrupted make() or restore() leaves, and what restore() does:
        mounted, marked           copy the tmpfs out, unmount, move the copy to the log dir's path
        mounted, not marked       unmount: make() stopped before the broker ran on it; the renamed log dir
                                  goes back
        a copy (not mounted)      it is whole (restore() copies before it unmounts): it goes to the path
        the path marked           the copy got there already: only what is left around it goes
        only the renamed log dir  it goes back; if the volume had been in use (the tmpfs went with a
                                  container restart) it is older than what the broker wrote: "stale",
                                  and the broker catches up from the other replicas
        Anything else at the log dir's path stops it, naming it, before anything is removed.
        """
        path = self.log_dir(tb)
        lower, copy, mark = self.paths(path)
        mounted = self.mounted(tb, path)
        has_lower, has_copy, marked = (tb.test(self.node, "test", "-e", p) for p in (lower, copy, mark))
        if not (mounted or has_lower or has_copy or marked):
            return {"node": self.node, "restored": False}
        tb.exec(self.node, "systemctl", "stop", "kafka", timeout=180)
        if mounted:
            if marked:
                tb.sh(self.node, f"rm -f {path}/{FILLER} && rm -rf {copy} && cp -a {path} {copy}", timeout=600)
                has_copy = True
            tb.in_mounts(self.node, "umount", path)
            marked = tb.test(self.node, "test", "-e", mark)
        source = None if marked else copy if has_copy else lower if has_lower else None
        if source:
            if tb.test(self.node, "test", "-e", path) and not tb.test(self.node, "rmdir", path):
                raise FaultError(f"{self.node}: {path} is not the empty mountpoint the volume left; {source} holds "
                                 "the broker's data: move it back by hand")  # fmt: skip
            tb.exec(self.node, "mv", source, path)
        tb.sh(self.node, f"rm -rf {lower} {copy} && rm -f {mark}", timeout=300)
        ensure_started(tb, self.node)
        # The renamed log dir without a tmpfs: make() stopped early, or the volume went with its container.
        return {"node": self.node, "restored": True, "from": source or path,
                "maybe_stale": source == lower and not mounted}  # fmt: skip


# -- everything off ---------------------------------------------------------------------


def heal(tb, volumes=True, timeout=600):
    """Every fault of every kind off, whatever was on, and the cluster whole again: what a soak ends with.

    The host's cut healed; every broker's data volume emptied of its filler
    (and, with volumes, put back on the container's disk); every node resumed,
    its failed state cleared and started, controllers first; then, if a node
    had been down, or a replication throttle or a relaxed min.insync.replicas
    was left (a recovery cut short), dc_recovery.yml for its DC, as an
    operator would; and what a recovery puts right read back once more
    ("left_behind"). Returns what it did; verify.heal_problems() judges it.
    """
    done = {}
    with _noted(done, "firewall"):
        done["firewall"] = heal_cut(tb)
    topo = tb.topology
    down = sorted(n for n in [*topo.all_controllers, *topo.all_brokers] if not is_active(tb, n))
    done["down"] = down
    for broker in topo.all_brokers:
        with _noted(done, "filler"):
            tb.exec(broker, "rm", "-f", f"{Volume(broker).log_dir(tb)}/{FILLER}")
    for node in [*topo.all_controllers, *topo.all_brokers]:
        with _noted(done, "start"):
            ensure_started(tb, node)
    if volumes:
        for broker in topo.all_brokers:
            with _noted(done, "volume"):
                restored = Volume(broker).restore(tb)
                if restored["restored"]:
                    done.setdefault("volumes_restored", []).append(broker)
    done["healthy"] = tb.wait_healthy(timeout)
    left = done["left_before_recovery"] = _left_behind(tb, done)
    dcs = sorted({topo.dc_of(n) for n in down} & set(topo.broker_dcs)) or (topo.broker_dcs[:1] if left else [])
    for dc in dcs:
        with _noted(done, f"recovery of {dc}"):
            recovered = DcLoss(dc).undo(tb)
            done.setdefault("recovered", []).append(recovered)
    if dcs:
        done["healthy"] = tb.wait_healthy(timeout)
        left = _left_behind(tb, done)
    done["left_behind"] = left
    return done


def _left_behind(tb, done):
    """tb.left_behind(), or None when it could not be read (noted: what is left is then unknown)."""
    with _noted(done, "reading the throttle and min.insync.replicas"):
        return tb.left_behind()
    return None


@contextlib.contextmanager
def _noted(done, step):
    """Run a step of heal(); an error is noted and the next step runs (heal does all it can)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001  one step's failure must not stop the others
        done.setdefault("errors", []).append(f"{step}: {exc}")
