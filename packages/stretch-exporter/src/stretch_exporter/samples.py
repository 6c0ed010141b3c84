"""What the exporter serves, from what it read: plain data in, samples [(metric, {label: value}, number)] out, and
the metric families prometheus_client serves of them (its text format: each number exact, each label escaped)."""

from __future__ import annotations

import ipaddress

from prometheus_client.core import GaugeMetricFamily

UNASSIGNED, UNKNOWN, OFFLINE = "unassigned", "unknown", "offline"

# Every metric the exporter serves, each a gauge, with its help; the alert rules and the dashboard may read only
# these (testkit/alert_rules.py).
METRICS = {
    "stretch_consumer_group_partition_lag": "Records the group has still to read, per partition (from its commit, or "
    "from the log start for an owned partition it never committed), by the DC of the member that owns it",
    "stretch_consumer_group_lag": "The group's lag summed over the partitions each DC's members own",
    "stretch_consumer_group_members": "The group's members, by the DC of their address",
    "stretch_consumer_group_uncommitted_partitions": "Partitions a member owns that the group never committed "
    "(their lag counts from the log start), by the member's DC",
    "stretch_partitions_under_min_isr": "Partitions with fewer in-sync replicas than min.insync.replicas, by topic "
    "and leader's DC",
    "stretch_partitions_under_min_isr_without_elr": "Partitions under min ISR with no eligible leader replica, by "
    "topic and leader's DC",
    "stretch_eligible_leader_replicas": "Eligible leader replicas (KIP-966) the DC's brokers hold",
    "stretch_exporter_read_success": "1 when the last read of the part succeeded and is not stale",
    "stretch_exporter_stale": "1 when the part's last read ended more than stale_seconds ago (its reader hangs): "
    "its figures are left out",
    "stretch_exporter_last_read_timestamp_seconds": "When the part was last read, successfully or not",
    "stretch_exporter_read_duration_seconds": "How long the last read of the part took",
}


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


def group_samples(group, members, committed, ends, starts, networks, broker_dcs):
    """The samples [(metric, labels, value)] of one group.

    members: [(host, [(topic, partition)])] (its members' addresses and
    assignments); committed: {(topic, partition): offset} (the group's
    commits; librdkafka gives a partition without one as a negative offset);
    ends: {(topic, partition): end offset}; starts: {(topic, partition): log
    start offset} of the owned partitions without a commit. A partition with
    a commit lags from it; one a member owns and the group never committed
    lags from the log start (a job stuck before its first commit has the
    whole backlog ahead of it) and is counted as uncommitted; one without a
    commit and without an owner is left out (nothing says where the group
    stands on it). The lag is never below 0 (a commit read after the end
    offset is not negative lag).
    """
    owner, per_dc = {}, dict.fromkeys(broker_dcs, 0)
    for host, assigned in members:
        dc = address_dc(host, networks)
        per_dc[dc] = per_dc.get(dc, 0) + 1
        for tp in assigned:
            owner[tp] = dc
    samples = [("stretch_consumer_group_members", {"group": group, "dc": dc}, n) for dc, n in sorted(per_dc.items())]
    totals, uncommitted = dict.fromkeys(broker_dcs, 0), dict.fromkeys(broker_dcs, 0)
    positions = {tp: offset for tp, offset in committed.items() if _committed(offset)}
    for tp in sorted(uncommitted_owned(members, committed) & set(starts)):
        positions[tp] = starts[tp]
        uncommitted[owner[tp]] = uncommitted.get(owner[tp], 0) + 1
    for (topic, partition), offset in sorted(positions.items()):
        if (topic, partition) not in ends:
            continue
        lag = max(0, ends[(topic, partition)] - offset)
        dc = owner.get((topic, partition), UNASSIGNED)
        totals[dc] = totals.get(dc, 0) + lag
        labels = {"group": group, "topic": topic, "partition": str(partition), "dc": dc}
        samples.append(("stretch_consumer_group_partition_lag", labels, lag))
    samples += [("stretch_consumer_group_lag", {"group": group, "dc": dc}, n) for dc, n in sorted(totals.items())]
    samples += [
        ("stretch_consumer_group_uncommitted_partitions", {"group": group, "dc": dc}, n)
        for dc, n in sorted(uncommitted.items())
    ]
    return samples


def _committed(offset):
    return offset is not None and offset >= 0


def uncommitted_owned(members, committed):
    """The partitions the members own that the group has no commit for: their lag counts from the log start."""
    return {tp for _host, assigned in members for tp in assigned if not _committed(committed.get(tp))}


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


def families(samples):
    """prometheus_client's metric families of [(metric, labels, value)], each metric's samples together, in the
    order they come, under its help (METRICS)."""
    out = {}
    for name, labels, value in samples:
        if name not in out:
            out[name] = GaugeMetricFamily(name, METRICS[name], labels=sorted(labels))
        out[name].add_metric([str(labels[k]) for k in sorted(labels)], value)
    return list(out.values())
