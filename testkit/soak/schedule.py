"""The soak's fault schedule: a pure function of the seed, the duration and the cluster's shape.

The same seed and duration on the same inventory give the same schedule, so
a run is replayed with `make soak SEED=<seed> DURATION=<duration>`. The
schedule plans when each fault starts and how long it is held; the run keeps
that order and those holds, and starts a fault no earlier than planned and
only once the cluster is whole again after the one before.

The failure model (docs/design.md) is the loss of any one DC. A slot of the
schedule is one fault, or one fault with others overlapping it, where the
nodes they take down together stay inside one DC:

- a broker paused (SIGSTOP) with a rolling restart of the same DC started
  during the pause: rolling_restart.yml goes node by node through its health
  gates, so at worst it holds a second node of that DC down at once;
- a broker paused with another node of the same DC killed (SIGKILL) during
  the pause.

Network cuts, a lost DC, a full disk and the fault beyond the model overlap
nothing. The one fault beyond the model, two DCs lost at once (a broker DC
and the tiebreaker: the quorum loses its majority), is marked in_model=False:
the cluster must refuse writes then and lose nothing acknowledged, and is not
expected to stay writable.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field

# Load alone before the first fault, and after the last one.
WARMUP_S = 30
COOLDOWN_S = 30
GAP_S = (5.0, 15.0)  # quiet time after a slot, once the cluster is whole again
# A run this long or longer has the fault beyond the model (unless asked for none).
BEYOND_MODEL_FROM_S = 1200


@dataclass(frozen=True)
class Kind:
    name: str
    in_model: bool
    hold: tuple  # (min, max) seconds the fault stays injected
    # Planned seconds to inject, undo and see the cluster whole again, beyond the hold:
    # what the schedule budgets; a slower recovery delays the faults after it.
    overhead: float
    summary: str


KINDS = {
    k.name: k
    for k in (
        Kind("broker-kill", True, (5, 15), 40, "SIGKILL of a broker's JVM; systemd starts it again"),
        Kind("controller-kill", True, (5, 15), 25, "SIGKILL of a controller, the active one when the target is active"),
        Kind("broker-pause", True, (20, 60), 25, "SIGSTOP of a broker's JVM, then SIGCONT: a long GC-like stall"),
        Kind("dc-loss", True, (20, 45), 150, "a broker DC killed by dc_failover.yml, then dc_recovery.yml"),
        Kind("cut", True, (20, 45), 35, "the two broker DCs cut from each other, both ways; both reach the tiebreaker"),
        Kind("oneway", True, (20, 45), 35, "packets from one broker DC to the other dropped, the reverse flowing"),
        Kind("tiebreaker-isolated", True, (20, 45), 15, "the tiebreaker DC cut from both broker DCs"),
        Kind("disk-full", True, (20, 45), 50, "a broker's data volume (a small tmpfs) filled to the last byte"),
        Kind("rolling-restart", True, (0, 0), 150, "rolling_restart.yml of one DC's nodes, during another fault"),
        Kind("two-dcs-lost", False, (20, 45), 150, "a broker DC and the tiebreaker killed at once: no quorum"),
    )
}


@dataclass(frozen=True)
class Topology:
    """The cluster's shape, as much as the schedule needs: which hosts are where."""

    broker_dcs: tuple
    tiebreaker: str
    brokers: dict  # {dc: (host, ...)}
    controllers: dict  # {dc: (host, ...)}

    @classmethod
    def of(cls, cluster):
        broker_dcs = tuple(cluster.dcs)
        others = sorted({n.dc for n in cluster.controllers} - set(broker_dcs))
        if len(broker_dcs) != 2 or len(others) != 1:
            raise ValueError(f"the soak needs two broker DCs and one tiebreaker DC; found {broker_dcs} and {others}")

        def by_dc(nodes):
            return {dc: tuple(sorted(n.host for n in nodes if n.dc == dc)) for dc in sorted({n.dc for n in nodes})}

        return cls(broker_dcs, others[0], by_dc(cluster.brokers), by_dc(cluster.controllers))

    @property
    def all_brokers(self):
        return sorted(h for hosts in self.brokers.values() for h in hosts)

    @property
    def all_controllers(self):
        return sorted(h for hosts in self.controllers.values() for h in hosts)

    def dc_of(self, host):
        for dc, hosts in (*self.brokers.items(), *self.controllers.items()):
            if host in hosts:
                return dc
        raise KeyError(host)


@dataclass
class Planned:
    """One fault of the schedule. at: seconds after the load started; parent: the fault it overlaps."""

    id: int
    kind: str
    target: str
    at: float
    hold: float
    in_model: bool
    parent: int | None = None
    children: list = field(default_factory=list, repr=False)

    def as_dict(self):
        out = asdict(self)
        out.pop("children")
        return out


@dataclass
class Slot:
    primary: Planned
    children: list  # [(offset after the primary's start, Planned)]
    span: float  # planned seconds, from the primary's start until the cluster is whole again
    gap: float


def _hold(rng, kind, low=None, high=None):
    lo, hi = KINDS[kind].hold
    return round(rng.uniform(lo if low is None else low, hi if high is None else high), 1)


def _fault(kind, target, hold):
    return Planned(0, kind, target, 0.0, hold, KINDS[kind].in_model)


def _slot(rng, primary, children=()):
    span = primary.hold + KINDS[primary.kind].overhead
    for offset, child in children:
        span = max(span, offset + child.hold + KINDS[child.kind].overhead)
    return Slot(primary, list(children), round(span, 1), round(rng.uniform(*GAP_S), 1))


def _alone(rng, topo, kind, disk_target):
    if kind in ("broker-kill", "broker-pause"):
        target = rng.choice(topo.all_brokers)
    elif kind == "controller-kill":
        target = "active" if rng.random() < 0.5 else rng.choice(topo.all_controllers)
    elif kind == "dc-loss":
        target = rng.choice(topo.broker_dcs)
    elif kind == "cut":
        target = "<>".join(topo.broker_dcs)
    elif kind == "oneway":
        a, b = topo.broker_dcs if rng.random() < 0.5 else reversed(topo.broker_dcs)
        target = f"{a}>{b}"
    elif kind == "tiebreaker-isolated":
        target = topo.tiebreaker
    elif kind == "disk-full":
        target = disk_target
    elif kind == "two-dcs-lost":
        target = f"{rng.choice(topo.broker_dcs)}+{topo.tiebreaker}"
    else:
        raise ValueError(f"{kind} does not run alone")
    return _slot(rng, _fault(kind, target, _hold(rng, kind)))


def _pause_with_restart(rng, topo):
    broker = rng.choice(topo.all_brokers)
    pause = _fault("broker-pause", broker, _hold(rng, "broker-pause", low=40))
    restart = _fault("rolling-restart", topo.dc_of(broker), 0.0)
    return _slot(rng, pause, [(round(rng.uniform(5, 15), 1), restart)])


def _pause_with_kill(rng, topo):
    broker = rng.choice(topo.all_brokers)
    dc = topo.dc_of(broker)
    pause = _fault("broker-pause", broker, _hold(rng, "broker-pause", low=30))
    others = [h for h in topo.brokers[dc] if h != broker]
    if others and rng.random() < 0.5:
        child = _fault("broker-kill", rng.choice(others), _hold(rng, "broker-kill", high=15))
    else:
        child = _fault("controller-kill", rng.choice(topo.controllers[dc]), _hold(rng, "controller-kill", high=15))
    return _slot(rng, pause, [(round(rng.uniform(5, pause.hold - 10), 1), child)])


ALONE = ("broker-kill", "controller-kill", "broker-pause", "dc-loss", "cut", "oneway", "tiebreaker-isolated",
         "disk-full")  # fmt: skip
# What fills the time left once every kind has its place: the faults that are over quickly.
FILL = {"broker-kill": 3, "controller-kill": 3, "broker-pause": 2, "oneway": 2, "cut": 1, "tiebreaker-isolated": 1,
        "disk-full": 1, "pause+kill": 3}  # fmt: skip


def plan(seed, duration, topo, beyond_model=True):
    """The schedule: [Planned], ordered by start, ids from 1; each overlapping fault names its parent.

    Every kind gets a place first (in an order the seed shuffles, as many as
    the duration holds), then quick faults fill the rest of it.
    """
    rng = random.Random(int(seed))
    budget = duration - WARMUP_S - COOLDOWN_S
    disk_target = rng.choice(topo.all_brokers)  # the one broker the run gives a small data volume
    builders = [lambda k=k: _alone(rng, topo, k, disk_target) for k in ALONE]
    builders += [lambda: _pause_with_restart(rng, topo), lambda: _pause_with_kill(rng, topo)]
    if beyond_model and duration >= BEYOND_MODEL_FROM_S:
        builders.append(lambda: _alone(rng, topo, "two-dcs-lost", disk_target))
    rng.shuffle(builders)
    slots, used = [], 0.0
    for build in builders:
        slot = build()
        if used + slot.span + slot.gap <= budget:
            slots.append(slot)
            used += slot.span + slot.gap
    names, weights = zip(*sorted(FILL.items()), strict=True)
    for _ in range(1000):  # bounded: the budget runs out long before
        choice = rng.choices(names, weights)[0]
        slot = _pause_with_kill(rng, topo) if choice == "pause+kill" else _alone(rng, topo, choice, disk_target)
        if used + slot.span + slot.gap > budget:
            break
        slots.append(slot)
        used += slot.span + slot.gap
    rng.shuffle(slots)
    faults, t = [], float(WARMUP_S)
    for slot in slots:
        slot.primary.at = round(t, 1)
        faults.append(slot.primary)
        for offset, child in slot.children:
            child.at = round(t + offset, 1)
            faults.append(child)
            slot.primary.children.append(child)
        t += slot.span + slot.gap
    for number, fault in enumerate(faults, start=1):
        fault.id = number
    for fault in faults:
        for child in fault.children:
            child.parent = fault.id
    return faults


def parse_duration(text):
    """Seconds of a duration written as 1800, 1800s, 30m, 1h or 1h30m."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    found = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not text or not found or not any(found.groups()):
        raise ValueError(f"duration {text!r}: write it as seconds (1800) or with units (30m, 1h, 1h30m, 90s)")
    h, m, s = (int(g or 0) for g in found.groups())
    return float(h * 3600 + m * 60 + s)


def clock(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def describe(faults, seed, duration):
    """The schedule as printed before a run, and by `python -m testkit.soak schedule`."""
    kinds = sorted({f.kind for f in faults})
    beyond = [f for f in faults if not f.in_model]
    lines = [
        f"soak schedule: seed {seed}, duration {clock(duration)} ({int(duration)} s): {len(faults)} faults of "
        f"{len(kinds)} kinds ({', '.join(kinds)}); beyond the failure model: {len(beyond)}",
        f"  {'#':>3}  {'at':>7}  {'hold':>5}  {'kind':<20} target",
    ]
    for f in faults:
        hold = "-" if f.kind == "rolling-restart" else f"{f.hold:.0f}s"
        note = f"  (during #{f.parent})" if f.parent else ""
        if not f.in_model:
            note += "  BEYOND THE FAILURE MODEL: writes must stop, nothing acknowledged may be lost"
        lines.append(f"  {f.id:>3}  {clock(f.at):>7}  {hold:>5}  {f.kind:<20} {f.target}{note}")
    lines.append(f"replay: make soak SEED={seed} DURATION={int(duration)}s")
    return "\n".join(lines)
