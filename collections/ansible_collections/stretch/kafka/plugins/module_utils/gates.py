"""Health gates for a rolling restart, and the order it goes in.

A snapshot of the cluster is plain data:

    {"partitions": [{"topic", "partition", "leader", "replicas", "isr"}],
     "min_isr": {topic: n},
     "brokers": {node_id: {"rack", "fenced"}},        registered brokers
     "quorum": {"leader": id or -1, "voters": {id: log end offset}}}

Each gate returns the problems it sees, as messages; an empty list passes.
"""

from __future__ import annotations

GATES = ("broker_down_safe", "broker_back", "controller_down_safe", "controller_back", "cluster_healthy", "writable")


class GateError(ValueError):
    pass


def _label(p):
    return f"{p['topic']}-{p['partition']}"


def _listed(kind, items, shown=5):
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return f"{len(items)} {kind}: {', '.join(items[:shown])}{more}"


def offline(snapshot):
    return [_label(p) for p in snapshot["partitions"] if p["leader"] is None or p["leader"] < 0]


def under_min_isr(snapshot):
    min_isr = snapshot["min_isr"]
    return [_label(p) for p in snapshot["partitions"] if len(p["isr"]) < min_isr.get(p["topic"], 1)]


def under_replicated(snapshot):
    return [_label(p) for p in snapshot["partitions"] if len(p["isr"]) < len(p["replicas"])]


def would_go_under_min_isr(snapshot, node):
    """Partitions whose ISR would drop below min.insync.replicas without node."""
    min_isr = snapshot["min_isr"]
    return [
        _label(p) for p in snapshot["partitions"] if node in p["isr"] and len(p["isr"]) - 1 < min_isr.get(p["topic"], 1)
    ]


def out_of_isr(snapshot, node):
    """Partitions node replicates but is not in the ISR of."""
    return [_label(p) for p in snapshot["partitions"] if node in p["replicas"] and node not in p["isr"]]


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


def _lagging(snapshot, max_lag, exclude=()):
    return [
        f"voter {v} is {lag} records behind the leader"
        for v, lag in quorum_lag(snapshot, exclude).items()
        if lag > max_lag
    ]


def _partitions(kind, items):
    return [_listed(kind, items)] if items else []


def broker_down_safe(snapshot, node, max_lag=0):
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


def broker_back(snapshot, node, max_lag=0):
    """After a broker restarts: registered and unfenced, in every ISR it belongs to, nothing under-replicated."""
    broker = snapshot["brokers"].get(node)
    problems = []
    if broker is None:
        problems.append(f"broker {node} is not registered")
    elif broker["fenced"]:
        problems.append(f"broker {node} is fenced")
    problems += _partitions(f"partition(s) without broker {node} in the ISR", out_of_isr(snapshot, node))
    problems += _partitions("under-replicated partition(s)", under_replicated(snapshot))
    return problems


def controller_down_safe(snapshot, node, max_lag=0):
    """Before a controller goes down: the quorum is led and every other voter has caught up."""
    return _quorum_led(snapshot) + _lagging(snapshot, max_lag, exclude=(node,))


def controller_back(snapshot, node, max_lag=0):
    """After a controller restarts: it is a voter again and has caught up with the leader."""
    problems = _quorum_led(snapshot)
    if node not in snapshot["quorum"]["voters"]:
        problems.append(f"controller {node} is not a voter")
    return problems + _lagging(snapshot, max_lag)


def cluster_healthy(snapshot, node=None, max_lag=0):
    """The whole cluster: quorum led and caught up, every broker in, nothing under-replicated or offline."""
    fenced = [str(b) for b, info in sorted(snapshot["brokers"].items()) if info["fenced"]]
    return (
        _quorum_led(snapshot)
        + _lagging(snapshot, max_lag)
        + ([f"fenced broker(s): {', '.join(fenced)}"] if fenced else [])
        + _partitions("offline partition(s)", offline(snapshot))
        + _partitions("under-replicated partition(s)", under_replicated(snapshot))
    )


def writable(snapshot, node=None, max_lag=0):
    """Writes with acks=all go on: the quorum is led, and every partition has a leader and min ISR."""
    return (
        _quorum_led(snapshot)
        + _partitions("offline partition(s)", offline(snapshot))
        + _partitions("partition(s) under min.insync.replicas", under_min_isr(snapshot))
    )


def check(gate, snapshot, node=None, max_lag=0):
    if gate not in GATES:
        raise GateError(f"unknown gate {gate!r}; known: {', '.join(GATES)}")
    return globals()[gate](snapshot, node, max_lag)


def restart_order(controllers, brokers, active_controller, dcs=(), hosts=()):
    """The hosts a rolling restart visits, in order: controllers, the active one last, then brokers.

    controllers, brokers: inventory records {host, node_id, rack}, in inventory order.
    dcs, hosts: restrict the restart to these DCs or these hosts (both: either matches).
    Raises GateError naming a DC or host that the inventory does not have.
    """
    every = list(controllers) + list(brokers)
    unknown_dcs = sorted(set(dcs) - {n["rack"] for n in every})
    unknown_hosts = sorted(set(hosts) - {n["host"] for n in every})
    if unknown_dcs or unknown_hosts:
        raise GateError(
            "nothing to restart for "
            + "; ".join(
                part
                for part in (
                    unknown_dcs and f"DC(s) {unknown_dcs}, the inventory has {sorted({n['rack'] for n in every})}",
                    unknown_hosts and f"host(s) {unknown_hosts} not in kafka_controllers or kafka_brokers",
                )
                if part
            )
        )

    def chosen(node):
        if not dcs and not hosts:
            return True
        return node["rack"] in dcs or node["host"] in hosts

    active = [c for c in controllers if int(c["node_id"]) == active_controller]
    others = [c for c in controllers if int(c["node_id"]) != active_controller]
    ordered = others + active + list(brokers)
    seen = set()
    order = []
    for node in ordered:
        if chosen(node) and node["host"] not in seen:
            seen.add(node["host"])
            order.append(node["host"])
    return order
