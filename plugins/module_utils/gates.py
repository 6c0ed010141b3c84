"""The one health judge: gates over a snapshot of the cluster, and the order of a rolling restart.

A snapshot is plain data, read over Kafka's admin protocol (kafka_admin.Admin.snapshot):

    {"cluster_id": str or None,
     "partitions": [{"topic", "partition", "leader", "replicas", "isr"}],
     "min_isr":    {topic: n},
     "brokers":    {node_id: {"dc", "fenced"}},                      registered brokers
     "quorum":     {"leader": id or -1, "epoch": n, "voters": {id: log end offset},
                    "observers": {id: log end offset},
                    "fetched": {id: when it last fetched from the leader, ms on its clock, or -1},
                    "replicas": {"voters": [...], "observers": [...]}},   with directory ids
                                                                          (module_utils/quorum.py)
     "errors":     [what could not be read],
     "read_at":    when the read began, epoch seconds on this machine}

A part the gate does not need may be left out (None). What the inventory
expects comes beside it:

    {"controllers": {node_id: dc}, "brokers": {node_id: dc}, "topics": [declared names]}

Each gate returns the problems it sees, as messages; an empty list passes.
Whether the cluster takes writes is not judged here from metadata (a dead
leader looks alive until it is fenced): module_utils/probe.py proves it
with acknowledged writes.
Every gate fails closed: a read error, a part that is missing, a declared
topic that is not in the reply, a topic without min.insync.replicas, a
quorum without voters or led by a node that is not one of them, or a
partition led by a node that is not one of its replicas or not a registered
broker is a problem named as such, never a pass.
"""

from __future__ import annotations

import time

NODE_GATES = (
    "broker_down_safe",
    "broker_back",
    "broker_drained",
    "broker_stopped",
    "controller_down_safe",
    "controller_back",
)
CLUSTER_GATES = ("quorum_ready", "cluster_ready", "cluster_healthy", "topics_writable")
# Gates about a whole DC: their subject is the DC's name.
DC_GATES = ("dc_lost",)
GATES = NODE_GATES + CLUSTER_GATES + DC_GATES
# The parts of a snapshot each gate reads; the others need not be fetched.
NEEDS = {
    "quorum_ready": ("quorum",),
    "controller_down_safe": ("quorum",),
    "controller_back": ("quorum",),
    "cluster_ready": ("quorum", "brokers"),
    "broker_drained": ("partitions",),
    "broker_stopped": ("brokers",),
    "dc_lost": ("quorum", "brokers"),
    "topics_writable": ("brokers", "partitions"),
}
# A voter that has not fetched from the quorum's leader for longer than the
# quorum's fetch timeout (controller.quorum.fetch.timeout.ms, 2 s by default)
# is one the leader no longer hears: it counts as gone.
SILENT_SECONDS = 2.0
EVERYTHING = ("quorum", "brokers", "partitions")


class GateError(ValueError):
    pass


def parts_needed(gate):
    return NEEDS.get(gate, EVERYTHING)


def _label(p):
    return f"{p['topic']}-{p['partition']}"


def _listed(kind, items, shown=5):
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"{len(items)} {kind}: {', '.join(items[:shown])}{more}"


def _partitions(kind, items):
    return [_listed(kind, items)] if items else []


# -- what could not be read ------------------------------------------------
def unreadable(snapshot, expected, parts):
    """Problems with the snapshot itself: read errors, missing parts, missing topics or settings."""
    problems = [f"cannot read {error}" for error in snapshot.get("errors") or []]
    for part in parts:
        if snapshot.get(part) is None:
            problems.append(f"the cluster's {part} could not be read")
    if "partitions" in parts and snapshot.get("partitions") is not None:
        present = {p["topic"] for p in snapshot["partitions"]}
        missing = sorted(set(expected.get("topics") or ()) - present)
        if missing:
            problems.append(_listed("declared topic(s) missing from the cluster's reply", missing))
        min_isr = snapshot.get("min_isr") or {}
        unknown = sorted(t for t in present if t not in min_isr)
        if unknown:
            problems.append(_listed("topic(s) whose min.insync.replicas could not be read", unknown))
    if "quorum" in parts and snapshot.get("quorum") is not None:
        quorum = snapshot["quorum"]
        voters = quorum.get("voters")
        if not voters:
            problems.append("the quorum reported no voters")
        elif quorum.get("leader") is not None and quorum["leader"] >= 0 and quorum["leader"] not in voters:
            # Every voter's lag is measured against the leader's log end.
            problems.append(f"the quorum's leader {quorum['leader']} is not among its voters {sorted(voters)}")
    if "partitions" in parts and snapshot.get("partitions") is not None:
        problems += unplaced_leaders(snapshot, with_brokers="brokers" in parts)
    return problems


def unplaced_leaders(snapshot, with_brokers):
    """Partitions whose leader is neither offline nor a node the gate can place: a reply it cannot judge."""

    def led(p):
        return p["leader"] is not None and p["leader"] >= 0

    def listed(items):
        return [f"{_label(p)} ({p['leader']})" for p in items]

    stray = [p for p in snapshot["partitions"] if led(p) and p["leader"] not in p["replicas"]]
    problems = _partitions("partition(s) led by a node that is not one of their replicas", listed(stray))
    brokers = snapshot.get("brokers")
    if with_brokers and brokers is not None:
        gone = [p for p in snapshot["partitions"] if led(p) and p not in stray and p["leader"] not in brokers]
        problems += _partitions("partition(s) led by a broker the cluster does not register", listed(gone))
    return problems


# -- partitions --------------------------------------------------------------
def offline(snapshot):
    return [_label(p) for p in snapshot["partitions"] if p["leader"] is None or p["leader"] < 0]


def under_min_isr(snapshot):
    min_isr = snapshot["min_isr"]
    return [_label(p) for p in snapshot["partitions"] if p["topic"] in min_isr and len(p["isr"]) < min_isr[p["topic"]]]


def under_replicated(snapshot):
    return [_label(p) for p in snapshot["partitions"] if len(p["isr"]) < len(p["replicas"])]


def would_go_under_min_isr(snapshot, node):
    """Partitions whose ISR would drop below min.insync.replicas without node."""
    min_isr = snapshot["min_isr"]
    return [
        _label(p)
        for p in snapshot["partitions"]
        if node in p["isr"] and p["topic"] in min_isr and len(p["isr"]) - 1 < min_isr[p["topic"]]
    ]


def out_of_isr(snapshot, node):
    """Partitions node replicates but is not in the ISR of."""
    return [_label(p) for p in snapshot["partitions"] if node in p["replicas"] and node not in p["isr"]]


# -- the quorum ----------------------------------------------------------------
def quorum_lag(snapshot, exclude=()):
    """{voter: records behind the leader} of the voters (but exclude) that lag at all."""
    quorum = snapshot["quorum"]
    voters = quorum["voters"]
    if quorum["leader"] not in voters:
        return {}
    end = voters[quorum["leader"]]
    return {v: end - offset for v, offset in sorted(voters.items()) if v not in exclude and end - offset > 0}


def _quorum_led(snapshot):
    leader = snapshot["quorum"]["leader"]
    return [] if leader is not None and leader >= 0 else ["the quorum has no leader"]


def _rebuilt(snapshot, voter):
    """Why a voter does not advance, when its node came back with new storage (an observer with its id)."""
    replicas = snapshot["quorum"].get("replicas") or {}
    voting = {r["id"]: r["directory_id"] for r in replicas.get("voters") or ()}
    for observer in replicas.get("observers") or ():
        if observer["id"] == voter and observer["directory_id"] != voting.get(voter):
            return (
                f": controller {voter} runs with new storage (directory {observer['directory_id']}) as an "
                "observer, its disk wiped or its host rebuilt; give the voter its new key with "
                "playbooks/controllers.yml -e kafka_ops_quorum_action=replace"
            )
    return ""


def _lagging(snapshot, max_lag, exclude=()):
    return [
        f"voter {v} is {lag} records behind the leader{_rebuilt(snapshot, v)}"
        for v, lag in quorum_lag(snapshot, exclude).items()
        if lag > max_lag
    ]


def voter_problems(snapshot, expected):
    """The voters against the inventory's controllers, and their spread over DCs."""
    declared = expected.get("controllers") or {}
    voters = set(snapshot["quorum"]["voters"])
    problems = []
    if declared and voters != set(declared):
        problems.append(f"voters are {sorted(voters)}, the inventory declares {sorted(declared)}")
    dcs = {declared[v] for v in voters if v in declared}
    if declared and len(dcs) < 3:
        problems.append(f"voters span {len(dcs)} DC(s) ({', '.join(sorted(dcs))}), need 3")
    return problems


# -- brokers -------------------------------------------------------------------
def broker_problems(snapshot, expected, only=None):
    """Inventory brokers not registered, fenced or in another DC; registered brokers the inventory lacks.

    only: check this broker alone.
    """
    declared = expected.get("brokers") or {}
    registered = snapshot["brokers"]
    problems = []
    for node, dc in sorted(declared.items()):
        if only is not None and node != only:
            continue
        broker = registered.get(node)
        if broker is None:
            problems.append(f"broker {node} is not registered")
        elif broker["fenced"]:
            problems.append(f"broker {node} is fenced")
        elif broker["dc"] != dc:
            problems.append(f"broker {node} runs with broker.rack={broker['dc']!r}, the inventory says {dc!r}")
    if only is None:
        problems += [
            f"broker {node} is registered but not in the inventory" for node in sorted(set(registered) - set(declared))
        ]
    elif only not in declared and only not in registered:
        problems.append(f"broker {only} is not registered")
    return problems


# -- the gates -----------------------------------------------------------------
def quorum_ready(snapshot, expected, node=None, max_lag=0):
    """The quorum has a leader, the inventory's voters over three DCs, and every voter caught up."""
    return _quorum_led(snapshot) + voter_problems(snapshot, expected) + _lagging(snapshot, max_lag)


def cluster_ready(snapshot, expected, node=None, max_lag=0):
    """Ready to serve: the quorum is ready and every inventory broker is registered, unfenced, in its DC."""
    return quorum_ready(snapshot, expected, node, max_lag) + broker_problems(snapshot, expected)


def broker_down_safe(snapshot, expected, node, max_lag=0):
    """Before a broker goes down: nothing offline or under min ISR, and none would be without it."""
    return (
        _partitions("offline partition(s)", offline(snapshot))
        + _partitions("partition(s) under min.insync.replicas", under_min_isr(snapshot))
        + _partitions(
            f"partition(s) that would go under min.insync.replicas without broker {node}",
            would_go_under_min_isr(snapshot, node),
        )
        + _quorum_led(snapshot)
    )


def broker_back(snapshot, expected, node, max_lag=0):
    """After a broker restarts: registered, unfenced, in its DC and in every ISR of its; nothing under-replicated."""
    return (
        broker_problems(snapshot, expected, only=node)
        + _partitions(f"partition(s) without broker {node} in the ISR", out_of_isr(snapshot, node))
        + _partitions("under-replicated partition(s)", under_replicated(snapshot))
    )


def broker_drained(snapshot, expected, node, max_lag=0):
    """Before a broker is retired: it holds no replica of any partition (so it leads none), nothing is short."""
    held = [_label(p) for p in snapshot["partitions"] if node in p["replicas"] or p["leader"] == node]
    return (
        _partitions(f"partition(s) with a replica on broker {node}", held)
        + _partitions("offline partition(s)", offline(snapshot))
        + _partitions("under-replicated partition(s)", under_replicated(snapshot))
    )


def broker_stopped(snapshot, expected, node, max_lag=0):
    """After a broker is stopped for good: the cluster has fenced it, or no longer registers it.

    The registered brokers it was judged on are in the snapshot, so what to
    do next (unregister it, or nothing) is read from a reply that was read.
    """
    broker = snapshot["brokers"].get(node)
    if broker is not None and not broker["fenced"]:
        return [f"broker {node} is registered and unfenced: it still runs, or the cluster has not fenced it yet"]
    return []


def registered(snapshot):
    """The ids of the registered brokers, or None when they were not read."""
    brokers = snapshot.get("brokers")
    return None if brokers is None else sorted(brokers)


def controller_down_safe(snapshot, expected, node, max_lag=0):
    """Before a controller goes down: the quorum is led and every other voter has caught up."""
    return _quorum_led(snapshot) + _lagging(snapshot, max_lag, exclude=(node,))


def controller_back(snapshot, expected, node, max_lag=0):
    """After a controller restarts: it is a voter again and has caught up with the leader."""
    problems = _quorum_led(snapshot)
    if node not in snapshot["quorum"]["voters"]:
        problems.append(f"controller {node} is not a voter")
    return problems + _lagging(snapshot, max_lag)


def cluster_healthy(snapshot, expected, node=None, max_lag=0):
    """The whole cluster: quorum led and caught up, every broker in, nothing under-replicated or offline."""
    return (
        _quorum_led(snapshot)
        + _lagging(snapshot, max_lag)
        + broker_problems(snapshot, expected)
        + _partitions("offline partition(s)", offline(snapshot))
        + _partitions("under-replicated partition(s)", under_replicated(snapshot))
    )


def topics_writable(snapshot, expected, node=None, max_lag=0):
    """Every partition of every topic can take an acks=all write by its metadata: led by a registered, unfenced
    broker, and its ISR at least the fewer of its min.insync.replicas and its replicas (what Kafka holds it to).
    After a failover's relaxation, the topics' own values included; the probe proves the writes themselves."""
    brokers = snapshot["brokers"]
    min_isr = snapshot["min_isr"]
    fenced_leader = [
        f"{_label(p)} ({p['leader']})"
        for p in snapshot["partitions"]
        if p["leader"] is not None and p["leader"] >= 0 and brokers.get(p["leader"], {}).get("fenced")
    ]
    short = [
        f"{_label(p)} (ISR {len(p['isr'])} of {min(min_isr[p['topic']], len(p['replicas']))})"
        for p in snapshot["partitions"]
        if p["topic"] in min_isr and len(p["isr"]) < min(min_isr[p["topic"]], len(p["replicas"]))
    ]
    return (
        _partitions("offline partition(s)", offline(snapshot))
        + _partitions("partition(s) led by a fenced broker", fenced_leader)
        + _partitions("partition(s) whose ISR is under their min.insync.replicas", short)
    )


# -- a whole DC ------------------------------------------------------------------
def silences(quorum):
    """{node id: seconds since it last fetched from the quorum's leader}, for every voter and observer the
    reply gives a fetch time for. Measured on the leader's clock, against the freshest fetch of any node
    (live nodes fetch all the time), so this machine's clock plays no part."""
    fetched = {node: at for node, at in (quorum.get("fetched") or {}).items() if at is not None and at >= 0}
    if not fetched:
        return {}
    now = max(fetched.values())
    return {node: (now - at) / 1000 for node, at in fetched.items()}


def _dc_nodes(expected, dc):
    brokers = sorted(n for n, where in (expected.get("brokers") or {}).items() if where == dc)
    controllers = sorted(n for n, where in (expected.get("controllers") or {}).items() if where == dc)
    return brokers, controllers


def dc_lost(snapshot, expected, dc, max_lag=0):
    """After a DC's nodes were taken down, or found unreachable: Kafka's own view agrees that the DC is gone.

    Every broker of the DC is fenced or no longer registered, no controller of the DC leads the quorum, and
    none has fetched from its leader within SILENT_SECONDS. A DC that SSH cannot reach while Kafka runs on in
    it fails here, with what still answers named: nothing may be relaxed for a DC that is up.
    """
    brokers, controllers = _dc_nodes(expected, dc)
    silent = silences(snapshot["quorum"])
    if not silent:
        return ["the quorum's reply carries no fetch times, so it cannot tell which nodes are gone "
                "(DescribeQuorum v1, Kafka 3.3 or later, gives them)"]  # fmt: skip
    answers = []
    for broker in brokers:
        registration = snapshot["brokers"].get(broker)
        if registration is not None and not registration["fenced"]:
            heard = f", last heard {silent[broker]:.1f} s ago" if broker in silent else ""
            answers.append(f"broker {broker} is registered and unfenced{heard}")
    leader = snapshot["quorum"].get("leader")
    if leader in controllers:
        answers.append(f"controller {leader} leads the quorum")
    answers += [
        f"controller {c} fetched from the quorum's leader {silent[c]:.1f} s ago"
        for c in controllers
        if c != leader and c in silent and silent[c] <= SILENT_SECONDS
    ]
    return [f"{dc} answers in Kafka's view: " + "; ".join(answers)] if answers else []


def _dc_fetches(snapshot, expected, dc):
    """The DC's brokers (its controllers when it has none), and {node: epoch seconds} of those the quorum's leader
    gives a last fetch time for, on its clock as it gives them."""
    brokers, controllers = _dc_nodes(expected, dc)
    nodes = brokers or controllers
    fetched = (snapshot.get("quorum") or {}).get("fetched") or {}
    return nodes, {n: fetched[n] / 1000 for n in nodes if fetched.get(n) is not None and fetched[n] >= 0}


def lost_since(snapshot, expected, dc):
    """When the DC went silent in Kafka's own record: the last fetch from the quorum's leader of the first of its
    brokers (of its controllers when it has none) to stop, epoch seconds on the leader's clock as it gives them,
    never re-based on another clock. None unless the leader gives one for every one of them: it drops an
    observer 300 s after its last fetch, and a leader elected after the loss never had them (lost_by bounds it)."""
    nodes, known = _dc_fetches(snapshot, expected, dc)
    return min(known.values()) if nodes and set(known) == set(nodes) else None


def lost_by(snapshot, expected, dc):
    """A bound of when the DC went silent: the earliest last fetch the quorum's leader still gives for one of its
    brokers (controllers), epoch seconds on the leader's clock; None when it gives none."""
    _nodes, known = _dc_fetches(snapshot, expected, dc)
    return min(known.values()) if known else None


def check(gate, snapshot, expected=None, node=None, max_lag=0):
    """The problems that keep gate from passing on this snapshot; empty when it passes.

    node: the node id a node gate is about; the DC's name for a DC gate."""
    if gate not in GATES:
        raise GateError(f"unknown gate {gate!r}; known: {', '.join(GATES)}")
    if gate in NODE_GATES and node is None:
        raise GateError(f"gate {gate} needs the node it is about")
    if gate in DC_GATES:
        dcs = set((expected or {}).get("brokers", {}).values()) | set((expected or {}).get("controllers", {}).values())
        if node not in dcs:
            raise GateError(f"gate {gate} needs a DC of the inventory ({', '.join(sorted(dcs))}), not {node!r}")
    expected = expected or {}
    problems = unreadable(snapshot, expected, parts_needed(gate))
    if problems:
        return problems
    return globals()[gate](snapshot, expected, node, max_lag)


def poll_until(read, judge, timeout, interval=2, wait=True, final=(), what="the cluster",
               clock=time.monotonic, sleep=time.sleep, wall=time.time):  # fmt: skip
    """Judge fresh reads until judge() returns no problems, or until timeout: the one poll loop.

    read: returns the state; an exception it raises is a failed poll, reported
    as "cannot read <what>". An exception of the final classes, from read or
    judge, is a refusal and ends the poll at once. wait=False judges once.
    Returns {"passed", "problems", "waited", "polls", "last"} (the last state
    read), and "first_judged_at" and "last_judged_at": when the first and the
    last read were judged, epoch seconds (wall), so a caller can set the
    moment the gate passed beside other records of the cluster.
    """
    start = clock()
    polls = 0
    first = None
    while True:
        polls += 1
        last = None
        try:
            last = read()
            problems = judge(last)
        except final:
            raise
        except Exception as exc:  # noqa: BLE001  an unreachable cluster is a failed poll, not a crash
            problems = [f"cannot read {what}: {exc}"]
        waited, judged = clock() - start, wall()
        first = judged if first is None else first
        if not problems or not wait or waited >= timeout:
            return {"passed": not problems, "problems": problems, "waited": round(waited, 1), "polls": polls,
                    "last": last, "first_judged_at": round(first, 3), "last_judged_at": round(judged, 3)}  # fmt: skip
        sleep(interval)


def poll(read, gate, expected, node=None, max_lag=0, timeout=300, interval=2, wait=True,
         clock=time.monotonic, sleep=time.sleep, wall=time.time):  # fmt: skip
    """Check the gate on fresh snapshots until it passes, or until timeout.

    read: returns a snapshot; an exception it raises is a failed poll, reported
    as "cannot read the cluster". wait=False checks once (a dry run).
    Returns {"passed", "problems", "waited", "polls", "snapshot"} (the last one read), with poll_until's moments.
    """
    outcome = poll_until(read, lambda snapshot: check(gate, snapshot, expected, node, max_lag), timeout, interval,
                         wait, (GateError,), "the cluster", clock, sleep, wall)  # fmt: skip
    outcome["snapshot"] = outcome.pop("last")
    return outcome


def report(snapshot, records):
    """A table of every inventory node, its DC and its state as the cluster reports it, for operators.

    records: the node records (module_utils/nodes.py). Parts of the snapshot
    that could not be read show as unknown.
    """
    known = snapshot.get("quorum") is not None
    quorum = snapshot.get("quorum") or {"leader": -1, "epoch": -1, "voters": {}, "observers": {}}
    brokers = snapshot.get("brokers")
    voters = quorum["voters"]
    end = voters.get(quorum["leader"])
    lines = [
        f"cluster {snapshot.get('cluster_id') or '?'}: "
        + (
            f"leader {quorum['leader']} (epoch {quorum.get('epoch', -1)}), {len(voters)} voters, "
            if known
            else "quorum unknown, "
        )
        + (f"{len(brokers)} brokers registered" if brokers is not None else "brokers unknown"),
        f"{'node':>6}  {'host':<24} {'DC':<10} {'role':<11} state",
    ]
    for record in sorted(records, key=lambda r: int(r["node_id"])):
        node = int(record["node_id"])
        states = []
        if "controller" in record["roles"]:
            if not known:
                states.append("quorum unknown")
            elif node in voters:
                role = "leader" if node == quorum["leader"] else "follower"
                lag = end - voters[node] if end is not None else "?"
                states.append(f"{role}, lag {lag}")
            else:
                states.append("not a voter")
        if "broker" in record["roles"]:
            if brokers is None:
                states.append("unknown")
            elif node not in brokers:
                states.append("not registered")
            else:
                b = brokers[node]
                states.append(f"{'fenced' if b['fenced'] else 'unfenced'}, rack {b['dc']}")
        role = "+".join(r for r in ("controller", "broker") if r in record["roles"])
        lines.append(f"{node:>6}  {record['host']:<24} {record['dc']:<10} {role:<11} {'; '.join(states)}")
    return lines


def elr_report(features, partitions):
    """Lines for operators on Eligible Leader Replicas (KIP-966): whether the cluster runs it, and the
    partitions holding eligible (or last-known) leader replicas now. features: {feature: finalized level} or
    None (not read); partitions: eligible_leaders() or None."""
    if features is None or partitions is None:
        return ["eligible leader replicas (KIP-966): could not be read"]
    level = features.get("eligible.leader.replicas.version", 0)
    state = (
        "on: a partition whose ISR falls under min.insync.replicas keeps the replicas that left it with every "
        "acknowledged record as eligible leaders" if level else
        "off: a partition that loses its whole ISR can only wait for it, or be elected uncleanly"
    )  # fmt: skip
    lines = [f"eligible leader replicas (KIP-966): eligible.leader.replicas.version {level}, {state}"]
    held = [f"{p['topic']}-{p['partition']} {p['elr']}" for p in partitions if p["elr"]]
    known = [f"{p['topic']}-{p['partition']} {p['last_known_elr']}" for p in partitions if p["last_known_elr"]]
    lines.append(f"  {_listed('partition(s) with eligible leader replicas', held)}" if held else
                 "  no partition holds eligible leader replicas")  # fmt: skip
    if known:
        lines.append(f"  {_listed('partition(s) with a last-known ELR', known)}")
    return lines


def topics_present(declared, found, errors):
    """The declared topics the cluster has now, in declared order, of one read of every topic's partitions
    ([{topic, ...}] and what could not be read): all a converge's restarts can expect their gates to read, since
    the converge creates the others after them. A read with errors says nothing of what is missing: GateError."""
    if errors:
        raise GateError(f"cannot read which declared topics the cluster has: {'; '.join(map(str, errors))}")
    have = {p["topic"] for p in found}
    return [name for name in declared if name in have]


def restart_order(controllers, brokers, active_controller, dcs=(), hosts=()):
    """The hosts a rolling restart visits, in order: controllers, the active one last, then brokers.

    controllers, brokers: node records, in inventory order.
    dcs, hosts: restrict the restart to these DCs or these hosts (both: either matches).
    Raises GateError naming a DC or host that the inventory does not have.
    """
    every = list(controllers) + list(brokers)
    unknown_dcs = sorted(set(dcs) - {n["dc"] for n in every})
    unknown_hosts = sorted(set(hosts) - {n["host"] for n in every})
    if unknown_dcs or unknown_hosts:
        raise GateError(
            "nothing to restart for "
            + "; ".join(
                part
                for part in (
                    unknown_dcs and f"DC(s) {unknown_dcs}, the inventory has {sorted({n['dc'] for n in every})}",
                    unknown_hosts and f"host(s) {unknown_hosts} not in kafka_controllers or kafka_brokers",
                )
                if part
            )
        )

    def chosen(node):
        if not dcs and not hosts:
            return True
        return node["dc"] in dcs or node["host"] in hosts

    active = [c for c in controllers if int(c["node_id"]) == active_controller]
    others = [c for c in controllers if int(c["node_id"]) != active_controller]
    order = []
    for node in [*others, *active, *brokers]:
        if chosen(node) and node["host"] not in order:
            order.append(node["host"])
    return order
