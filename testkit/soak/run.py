"""A soak run: the schedule's faults on the running testbed under steady load, then the verifier's verdict.

1. The schedule is printed (and kept in the run's directory); anything an
   earlier run left is healed, and the cluster must be whole.
2. A topic of its own (soak-RUN, RF 4, 8 partitions), and, when the
   schedule fills a disk, that broker's small data volume.
3. The load: a producer and a group member in each broker DC; a run that
   began over the WAN checks it every few seconds until the load stops
   (WanWatch).
4. The faults, slot by slot: each starts no earlier than planned and once
   the cluster is whole again after the one before (gates.cluster_healthy,
   as the playbooks judge it), is held, and undone; each one's record goes
   to faults.jsonl as it ends. A cluster that is not whole again within
   SETTLE_TIMEOUT_S, nor after a heal (or whose heal failed a step or left a
   throttle or a relaxed min.insync.replicas), is wedged: the schedule stops
   there.
5. Whatever happens (an error, Ctrl-C, SIGTERM), `finally` undoes every
   fault still on and heals everything (faults.heal), then stops the load.
   A second Ctrl-C during that heal starts it once more; a third leaves it
   to `make soak-heal`.
6. The full read of the topic as each DC, then the verifier (verify.py),
   reports/soak.json and the timeline picture. Besides the verifier's
   problems, the verdict fails on an interrupted or failed run, a planned
   fault never started, a wedged cluster, a fault the final heal could not
   undo, and a final heal that failed a step, left the cluster not whole, or
   left a replication throttle or a relaxed min.insync.replicas behind
   (verify.heal_problems).

Bounded: the schedule is finite (schedule.plan); no slot starts later than
twice the duration plus ten minutes after the load began (the rest are
recorded as not run), and every step of the slot under way then has its own
limit (a playbook 30 minutes, a health wait SETTLE_TIMEOUT_S, a command a
minute or a few); the clients end themselves after three times the duration
plus an hour, the reads after ten minutes each.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient

from testkit import REPO
from testkit.cluster import CLUSTER_DEFAULTS, create_topic
from testkit.drill import wan_probe
from testkit.periodic import Periodic
from testkit.supervisor import proc_stat

from . import faults, reader, schedule, timeline, verify
from .load import Clients

SETTLE_TIMEOUT_S = 600
PARTITIONS = 8


class Recorder:
    """faults.jsonl: one line per fault once it is over (or found not run), written at once."""

    def __init__(self, path):
        self.path, self.lock = Path(path), threading.Lock()

    def write(self, record):
        with self.lock, self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")
            f.flush()
            os.fsync(f.fileno())


def wan_state(state=None):
    """The WAN between the DCs as its delayer runs it now: {"on", "links", "delayer_pid", and "why" when off}.

    On: the delayer's supervisor runs, and the delayer's report (written
    each second) is fresh and shows the configured links (wan.control.loaded).
    A delayer that died lets packets through undelayed until its supervisor
    starts another (--queue-bypass), so a new delayer_pid means a gap.
    """
    from testkit.wan import control  # noqa: PLC0415  only for this check

    state = state or control.State()
    try:
        active = [link for link in state.links() if link.active]
    except RuntimeError as exc:
        return {"on": False, "links": [], "delayer_pid": None, "why": str(exc)}
    stats = state.stats()
    why = None
    if state.supervisor_pid() is None:
        why = "the delayer's supervisor is not running"
    elif not active:
        why = "no link between the DCs is delayed"
    elif not control.loaded(stats, active):
        why = "the delayer's report is missing, stale, or not of the configured links"
    elif not state.report_is_current(stats):
        why = "the delayer's report is from a process the supervisor no longer runs"
    found = {"on": why is None, "links": [link.as_dict() for link in active], "delayer_pid": (stats or {}).get("pid")}
    return {**found, "why": why} if why else found


class WanWatch(Periodic):
    """The WAN checked every interval seconds through the run (wan_state()); stop() returns what it saw:
    {"interval_s", "checks", "off": how many found it off, "off_examples": [{"t", "why"}], "delayer_pids": every
    delayer process seen, in order}."""

    what = "watching the WAN"

    def __init__(self, interval=5.0, state=None):
        super().__init__(interval)
        self.state, self.checks, self.off, self.delayer_pids = state, 0, [], []

    def sample(self):
        wan = wan_state(self.state)
        self.checks += 1
        if not wan["on"]:
            self.off.append({"t": time.time(), "why": wan["why"]})
        if wan["delayer_pid"] is not None and wan["delayer_pid"] not in self.delayer_pids:
            self.delayer_pids.append(wan["delayer_pid"])

    def summary(self):
        return {"interval_s": self.interval, "checks": self.checks, "off": len(self.off),
                "off_examples": self.off[:5], "delayer_pids": self.delayer_pids}  # fmt: skip

    def stop(self):
        super().stop()
        return self.summary()


def stop_sampler(sampler):
    """A background sampler's figures (the RTT probe's, the WAN watch's), {"error"} if it failed, or None when
    there was none (no WAN on the testbed) or it never started. Its failure is judged with the figures, not
    here."""
    if sampler is None or sampler.ident is None:
        return None
    try:
        return sampler.stop()
    except Exception as exc:  # noqa: BLE001  the verifier judges it
        return {"error": str(exc)}


def playbook_children():
    """The pids of the ansible-playbook processes this process started (a rolling restart's, when interrupted)."""
    me, found = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        stat = proc_stat(entry.name)
        try:
            if stat and stat[1] == me and b"ansible-playbook" in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


class Soak:
    def __init__(self, cluster, seed, duration, workdir, rate=50, beyond_model=True, require_wan=True, out=print):
        self.cluster, self.seed, self.duration, self.rate = cluster, int(seed), float(duration), rate
        self.topology = schedule.Topology.of(cluster)
        self.plan = schedule.plan(self.seed, self.duration, self.topology, beyond_model=beyond_model)
        self.run_id = uuid.uuid4().hex[:10]
        self.topic = f"soak-{self.run_id}"
        self.workdir = Path(workdir) / self.run_id
        self.require_wan, self.out = require_wan, out
        self.stop = threading.Event()
        self.active, self.lock = {}, threading.Lock()
        self.wedged, self.interrupted, self.error = None, False, None
        self.wan_rtt = None  # the round trips between the DCs measured from the nodes through the run
        self.wan_watch = None  # what WanWatch saw of the WAN through the run
        # No slot starts later than this after the load did (the one under way finishes: every step of it is
        # bounded); the rest are recorded as not run.
        self.give_up_after = 2 * self.duration + 600
        self.tb = faults.Testbed(cluster, self.topology, self.workdir / "playbooks")

    # -- one fault ---------------------------------------------------------------
    def run_fault(self, planned, record):
        fault = faults.make(planned.kind, planned.target)
        rec = {**planned.as_dict(), "planned_at": planned.at, "start": time.time(), "injected": None, "undo": None,
               "end": None, "details": {}, "error": None}  # fmt: skip
        self.out(f"{time.strftime('%H:%M:%S')}  #{planned.id} {planned.kind} {planned.target}: on")
        with self.lock:
            self.active[planned.id] = fault  # before inject: undo is idempotent, and a half-injected fault counts
        try:
            details = fault.inject(self.tb)
            rec["details"]["inject"], rec["injected"] = details, time.time()
            rec["resolved"] = details.get("node") or planned.target
            rec["error"] = faults.playbook_failure(details)
            if planned.kind != "rolling-restart":
                self.stop.wait(planned.hold)
        except Exception as exc:  # noqa: BLE001  recorded; the fault is undone all the same
            rec["error"] = f"inject: {exc}"
        finally:
            rec["undo"] = time.time()
            try:
                rec["details"]["undo"] = fault.undo(self.tb)
                with self.lock:
                    self.active.pop(planned.id, None)
            except Exception as exc:  # noqa: BLE001  left in self.active: heal() takes it off
                rec["error"] = (rec["error"] or "") + f" undo: {exc}"
            rec["end"] = time.time()
            record.write(rec)
            self.out(f"{time.strftime('%H:%M:%S')}  #{planned.id} {planned.kind} {planned.target}: off"
                     f"{' (' + rec['error'].strip() + ')' if rec['error'] else ''}")  # fmt: skip

    def run_child(self, planned, at, record):
        if self.stop.wait(max(0.0, at - time.time())):
            record.write({**planned.as_dict(), "start": None, "error": "not run: the soak was stopping"})
            return
        self.run_fault(planned, record)

    def run_slot(self, primary, record):
        start = time.time()
        children = []
        for child in primary.children:
            thread = threading.Thread(target=self.run_child, args=(child, start + child.at - primary.at, record),
                                      daemon=True)  # fmt: skip
            thread.start()
            children.append(thread)
        self.run_fault(primary, record)
        for thread in children:
            thread.join(timeout=2400)  # a rolling restart's playbook, bounded by its own gates

    def settle(self):
        """Whole again within SETTLE_TIMEOUT_S, or after a heal; otherwise the cluster is wedged."""
        outcome = self.tb.wait_healthy(SETTLE_TIMEOUT_S)
        if outcome["passed"]:
            return outcome
        self.out(f"not whole {SETTLE_TIMEOUT_S} s after the fault: {outcome['problems'][:3]}; healing")
        healed = faults.heal(self.tb, volumes=False, timeout=SETTLE_TIMEOUT_S)
        problems = verify.heal_problems(healed)
        if problems:
            self.wedged = {"problems": problems, "heal": healed}
        return healed["healthy"]

    # -- the run -----------------------------------------------------------------
    def check_wan(self):
        """The WAN the run goes over; with require_wan, a run without it stops here, before it touches anything."""
        wan = wan_state()
        if self.require_wan and not wan["on"]:
            raise SystemExit(f"soak: the WAN between the DCs is not on ({wan.get('why') or 'no delayer running'}); "
                             "`make up` puts it on (or pass --without-wan)")  # fmt: skip
        return wan

    def prepare(self, wan):
        self.workdir.mkdir(parents=True)
        self.write_schedule()
        healed = faults.heal(self.tb, volumes=True, timeout=300)
        problems = verify.heal_problems(healed)
        if problems:
            raise SystemExit(f"soak: the cluster is not as a soak starts from: {'; '.join(problems)}")
        config = {"bootstrap.servers": self.cluster.bootstrap_servers, **self.cluster.client_config}
        create_topic(AdminClient(config), self.topic, PARTITIONS, int(CLUSTER_DEFAULTS["kafka_replication_factor"]))
        meta = {"run_id": self.run_id, "topic": self.topic, "seed": self.seed, "duration_s": self.duration,
                "rate_per_producer": self.rate, "wan": wan, "dcs": list(self.topology.broker_dcs)}  # fmt: skip
        disk = sorted({f.target for f in self.plan if f.kind == "disk-full"})
        if disk:
            meta["volume"] = faults.Volume(disk[0]).make(self.tb)
            if not self.tb.wait_healthy(SETTLE_TIMEOUT_S)["passed"]:
                raise SystemExit(f"soak: the cluster is not whole after {disk[0]} moved onto its small data volume")
        (self.workdir / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
        return meta

    def execute(self, clients, t0):
        record = Recorder(self.workdir / "faults.jsonl")
        give_up = t0 + self.give_up_after
        ready = time.time()
        for primary in (f for f in self.plan if f.parent is None):
            if self.wedged:
                break
            if time.time() > give_up:
                why = f"not run: no slot starts {self.give_up_after:.0f} s after the load began"
                for f in (primary, *primary.children):
                    record.write({**f.as_dict(), "start": None, "error": why})
                continue
            time.sleep(max(0.0, t0 + primary.at - time.time(), ready + schedule.GAP_S[0] - time.time()))
            self.run_slot(primary, record)
            dead = [name for name, alive in clients.alive().items() if not alive]
            if dead:
                raise RuntimeError(f"the soak's clients {dead} exited during fault #{primary.id}")
            self.settle()
            ready = time.time()
        # Load alone to the end of the planned duration (a wedged cluster only gets the cool-down's worth).
        time.sleep(schedule.COOLDOWN_S if self.wedged else max(schedule.COOLDOWN_S, t0 + self.duration - time.time()))

    def heal_everything(self):
        self.stop.set()
        for pid in playbook_children():
            os.kill(pid, signal.SIGTERM)
        with self.lock:
            active = sorted(self.active.items(), reverse=True)
        undone = {}
        for fault_id, fault in active:
            try:
                undone[fault_id] = fault.undo(self.tb)
            except Exception as exc:  # noqa: BLE001  heal() below goes on
                undone[fault_id] = {"error": str(exc)}
        return {"undone": undone, "heal": faults.heal(self.tb, volumes=True, timeout=SETTLE_TIMEOUT_S)}

    def run(self, report_path, picture_path):
        self.out(schedule.describe(self.plan, self.seed, self.duration))
        wan = self.check_wan()
        try:
            self.prepare(wan)
        except BaseException:
            self.heal_everything()  # a data volume made, a topic half there: nothing is left behind
            raise
        self.out(f"run {self.run_id}: topic {self.topic}, logs in {self.workdir}")
        healed, probe = None, wan_probe()
        watch = WanWatch() if wan["on"] else None  # the WAN the run began with, until its clients stop
        try:
            if watch:
                watch.start()
            bound = 3 * self.duration + 3600  # the clients' own limit, far beyond any run that goes well
            with Clients(self.cluster, self.workdir, self.topic, self.run_id, self.rate, bound) as clients:
                try:
                    clients.wait_writing()
                    if probe:
                        probe.start()
                    self.execute(clients, time.time())
                except KeyboardInterrupt:
                    self.interrupted = True
                    self.out("interrupted: healing everything, then verifying what was written")
                except Exception as exc:  # noqa: BLE001  healed below, and in the report
                    self.error = f"{type(exc).__name__}: {exc}"
                    self.out(f"the run stopped: {self.error}; healing everything, then verifying what was written")
                finally:
                    healed = self.heal_everything()
                    clients.stop()
        finally:
            if healed is None:
                healed = self.heal_everything()
            self.wan_rtt = stop_sampler(probe)
            self.wan_watch = stop_sampler(watch)
        return self.verdict(healed, report_path, picture_path)

    def write_schedule(self):
        """schedule.json: the faults planned, for the verifier to account for (verify.account)."""
        (self.workdir / "schedule.json").write_text(json.dumps([f.as_dict() for f in self.plan], indent=1) + "\n")

    def record_outcome(self, healed):
        """run.json: what only the run knows of itself, for the verifier (verify.run_problems) to judge."""
        outcome = {"interrupted": self.interrupted, "error": self.error, "wedged": self.wedged, "heal": healed,
                   "wan_rtt": self.wan_rtt, "wan_watch": self.wan_watch}  # fmt: skip
        (self.workdir / "run.json").write_text(json.dumps(outcome, indent=1, default=str) + "\n")

    def verdict(self, healed, report_path, picture_path):
        """The reads as each DC, then the verifier on the run's directory: its report is the run's."""
        self.record_outcome(healed)
        client = self.cluster.client_config
        for dc in self.topology.broker_dcs:
            reader.read_topic(self.cluster.bootstrap_servers, client, self.topic, self.run_id, dc,
                              self.workdir / f"read-{dc}.jsonl")  # fmt: skip
        report = verify.verify(self.workdir)
        report["workdir"] = str(self.workdir)
        verify.write(report, report_path)
        acks = {name: verify.acknowledgements(events) for name, events in verify.load_dir(self.workdir)[0].items()}
        title = (f"soak seed {self.seed}, {report['duration_s'] / 60:.0f} min, {len(report['faults'])} faults of "
                 f"{len(report['fault_kinds'])} kinds: {report['acked']:,} acknowledged, lost {report['lost']}, "
                 f"max stall {report['max_stall_s']} s")  # fmt: skip
        Path(picture_path).parent.mkdir(parents=True, exist_ok=True)
        timeline.draw(report, acks, picture_path, title)
        if report["ok"]:
            admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap_servers, **client})
            admin.delete_topics([self.topic])[self.topic].result(timeout=60)
        return report


def default_paths():
    return REPO / "reports/soak.json", REPO / "docs/images/soak-timeline.png", REPO / "reports/soak"
