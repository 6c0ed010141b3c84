"""What the exporter serves, from what it read: plain data in, samples [(metric, {label: value}, number)] out, and
Prometheus's text format of them."""

from __future__ import annotations

import ipaddress

UNASSIGNED, UNKNOWN, OFFLINE = "unassigned", "unknown", "offline"

HELP = {
    "stretch_consumer_group_partition_lag": ("gauge", "Records the group has not committed yet, per partition, "
                                             "by the DC of the member that owns it"),
    "stretch_consumer_group_lag": ("gauge", "The group's lag summed over the partitions each DC's members own"),
    "stretch_consumer_group_members": ("gauge", "The group's members, by the DC of their address"),
    "stretch_partitions_under_min_isr": ("gauge", "Partitions with fewer in-sync replicas than min.insync.replicas, "
                                         "by topic and leader's DC"),
    "stretch_partitions_under_min_isr_without_elr": ("gauge", "Partitions under min ISR with no eligible leader "
                                                     "replica, by topic and leader's DC"),
    "stretch_eligible_leader_replicas": ("gauge", "Eligible leader replicas (KIP-966) the DC's brokers hold"),
    "stretch_exporter_read_success": ("gauge", "1 when the last read of the part succeeded"),
    "stretch_exporter_last_read_timestamp_seconds": ("gauge", "When the part was last read, successfully or not"),
    "stretch_exporter_read_duration_seconds": ("gauge", "How long the last read of the part took"),
}  # fmt: skip


def address_dc(host, networks):
    """The DC whose networks hold a member's address (Kafka gives it as "/10.1.2.3" or "name/10.1.2.3"); UNKNOWN
    when none does or it is no address."""
    text = str(host or "").rsplit("/", 1)[-1].strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return UNKNOWN
    for dc, nets in sorted(networks.items()):
        if any(address in net for net in nets):
            return dc
    return UNKNOWN


def group_samples(group, members, committed, ends, networks, broker_dcs):
    """The samples [(metric, labels, value)] of one group.

    members: [(host, [(topic, partition)])] (its members' addresses and
    assignments); committed: {(topic, partition): offset} (the group's
    commits; a partition without one is left out); ends: {(topic,
    partition): end offset}. The lag of a partition is never below 0 (a commit
    read after the end offset is not negative lag).
    """
    owner, per_dc = {}, dict.fromkeys(broker_dcs, 0)
    for host, assigned in members:
        dc = address_dc(host, networks)
        per_dc[dc] = per_dc.get(dc, 0) + 1
        for tp in assigned:
            owner[tp] = dc
    samples = [("stretch_consumer_group_members", {"group": group, "dc": dc}, n) for dc, n in sorted(per_dc.items())]
    totals = dict.fromkeys(broker_dcs, 0)
    for (topic, partition), offset in sorted(committed.items()):
        if (topic, partition) not in ends or offset is None or offset < 0:
            continue
        lag = max(0, ends[(topic, partition)] - offset)
        dc = owner.get((topic, partition), UNASSIGNED)
        totals[dc] = totals.get(dc, 0) + lag
        labels = {"group": group, "topic": topic, "partition": str(partition), "dc": dc}
        samples.append(("stretch_consumer_group_partition_lag", labels, lag))
    samples += [("stretch_consumer_group_lag", {"group": group, "dc": dc}, n) for dc, n in sorted(totals.items())]
    return samples


def replica_samples(partitions, min_isr, broker_dc, broker_dcs):
    """The samples of the partitions' replica state.

    partitions: [{topic, partition, leader, isr, elr}] (leader -1 when none;
    elr the eligible leader replicas, [] or None when empty); min_isr: {topic:
    min.insync.replicas}; broker_dc: {broker id: DC}. Every topic has a
    sample for every broker DC, so a healthy cluster still shows its zeros.
    """
    under, without, elr_held = {}, {}, dict.fromkeys(broker_dcs, 0)
    for topic in sorted({p["topic"] for p in partitions}):
        for dc in broker_dcs:
            under[(topic, dc)] = without[(topic, dc)] = 0
    for p in partitions:
        dc = broker_dc.get(p["leader"], OFFLINE) if p["leader"] is not None and p["leader"] >= 0 else OFFLINE
        elr = p.get("elr") or []
        for replica in elr:
            held = broker_dc.get(replica, UNKNOWN)
            elr_held[held] = elr_held.get(held, 0) + 1
        if len(p["isr"]) < min_isr[p["topic"]]:
            under[(p["topic"], dc)] = under.get((p["topic"], dc), 0) + 1
            if not elr:
                without[(p["topic"], dc)] = without.get((p["topic"], dc), 0) + 1
    samples = [("stretch_partitions_under_min_isr", {"topic": t, "dc": dc}, n) for (t, dc), n in sorted(under.items())]
    samples += [
        ("stretch_partitions_under_min_isr_without_elr", {"topic": t, "dc": dc}, n)
        for (t, dc), n in sorted(without.items())
    ]
    samples += [("stretch_eligible_leader_replicas", {"dc": dc}, n) for dc, n in sorted(elr_held.items())]
    return samples


def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def exposition(samples):
    """Prometheus's text format of [(metric, labels, value)], each metric's samples together under its HELP and
    TYPE."""
    by_metric = {}
    for name, labels, value in samples:
        by_metric.setdefault(name, []).append((labels, value))
    lines = []
    for name, rows in by_metric.items():
        kind, text = HELP[name]
        lines += [f"# HELP {name} {text}", f"# TYPE {name} {kind}"]
        for labels, value in rows:
            inner = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            lines.append(f"{name}{{{inner}}} {float(value):g}" if inner else f"{name} {float(value):g}")
    return "\n".join(lines) + "\n"
