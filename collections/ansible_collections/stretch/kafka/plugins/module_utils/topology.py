"""Inventory validation for a 2.5-DC KRaft stretch cluster.

Every rule returns messages that name the offending host or variable, so an
operator can fix the inventory without reading this code. Nothing here talks
to a host: the checks run on the Ansible controller before any connection.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ansible_collections.stretch.kafka.plugins.module_utils import placement, quotas, topics

# Replicas a partition keeps in each broker DC, so that a consumer in either
# DC survives one broker failure without reading across DCs.
REPLICAS_PER_DC = 2
BROKER_DCS = 2
MIN_CONTROLLER_DCS = 3

# Replication factors the cluster uses for the topics it creates itself, with
# the min.insync setting that goes with each.
REPLICATION_FACTORS = {
    "default.replication.factor": "min.insync.replicas",
    "offsets.topic.replication.factor": None,
    "transaction.state.log.replication.factor": "transaction.state.log.min.isr",
}


@dataclass(frozen=True)
class Node:
    """One inventory host as the validator sees it."""

    host: str
    node_id: object
    rack: str
    roles: tuple
    properties: dict = field(default_factory=dict)

    @property
    def is_broker(self):
        return "broker" in self.roles

    @property
    def is_controller(self):
        return "controller" in self.roles

    @classmethod
    def from_dict(cls, data):
        return cls(
            host=str(data["host"]),
            node_id=data.get("node_id"),
            rack=str(data.get("rack") or ""),
            roles=tuple(data.get("roles") or ()),
            properties=dict(data.get("properties") or {}),
        )


def _as_int(value):
    """Return value as an int, or None when it is not a whole number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def check_node_ids(nodes):
    errors = []
    owners = defaultdict(list)
    for node in nodes:
        node_id = _as_int(node.node_id)
        if node.node_id in (None, ""):
            errors.append(f"{node.host}: kafka_node_id is not set (every node needs a unique integer id)")
        elif node_id is None or node_id < 0:
            errors.append(f"{node.host}: kafka_node_id={node.node_id!r} is not a non-negative integer")
        else:
            owners[node_id].append(node.host)
    for node_id, hosts in sorted(owners.items()):
        if len(hosts) > 1:
            errors.append(f"kafka_node_id {node_id} is used by more than one host: {', '.join(hosts)}")
    return errors


def check_roles(nodes):
    return [
        f"{node.host}: is in neither kafka_controllers nor kafka_brokers"
        for node in nodes
        if not (node.is_broker or node.is_controller)
    ]


def check_racks(nodes):
    errors = []
    for node in nodes:
        if node.rack:
            continue
        if node.is_broker:
            errors.append(f"broker {node.host} has no rack: set kafka_rack (its DC) in the group_vars of its DC group")
        else:
            errors.append(
                f"controller {node.host} has no rack: set kafka_rack (its DC) so the quorum's "
                "spread over DCs can be checked"
            )
    return errors


def check_controller_quorum(nodes):
    """The voters must span three DCs and survive the loss of any one of them."""
    voters = [n for n in nodes if n.is_controller and n.rack]
    if not voters:
        return ["no controllers: put at least three hosts, in three DCs, in the kafka_controllers group"]
    per_dc = Counter(n.rack for n in voters)
    errors = []
    if len(per_dc) < MIN_CONTROLLER_DCS:
        errors.append(
            f"controllers span {len(per_dc)} DC(s) ({', '.join(sorted(per_dc))}); a quorum that survives "
            f"the loss of any one DC needs controllers in at least {MIN_CONTROLLER_DCS} DCs "
            "(add a controller-only tiebreaker in a third DC)"
        )
    total = len(voters)
    for dc, count in sorted(per_dc.items()):
        # Losing this DC must leave a strict majority of the voters.
        if count * 2 >= total:
            hosts = ", ".join(n.host for n in voters if n.rack == dc)
            errors.append(
                f"DC {dc} holds {count} of {total} controller voters ({hosts}): losing it leaves "
                f"{total - count}, not a majority; spread the voters so no DC holds half or more (e.g. 2-2-1)"
            )
    return errors


def broker_dcs(nodes):
    """Brokers per DC, as {dc: [hosts]}."""
    dcs = defaultdict(list)
    for node in nodes:
        if node.is_broker and node.rack:
            dcs[node.rack].append(node.host)
    return dict(dcs)


def check_broker_dcs(nodes):
    dcs = broker_dcs(nodes)
    if len(dcs) != BROKER_DCS:
        listing = ", ".join(f"{dc} ({len(h)})" for dc, h in sorted(dcs.items())) or "none"
        return [f"brokers must be in exactly {BROKER_DCS} DCs, found {len(dcs)}: {listing}"]
    return []


def check_replication(nodes):
    """Each broker's replication factors must put two replicas in each broker DC."""
    dcs = broker_dcs(nodes)
    if len(dcs) != BROKER_DCS:
        return []  # reported by check_broker_dcs; the bounds below would be meaningless
    total = sum(len(h) for h in dcs.values())
    low, high = REPLICAS_PER_DC * BROKER_DCS, total
    small = {dc: len(h) for dc, h in dcs.items() if len(h) < REPLICAS_PER_DC}
    errors = []
    if small:
        errors.append(
            "each broker DC needs at least "
            f"{REPLICAS_PER_DC} brokers to hold two replicas of every partition; "
            + ", ".join(f"{dc} has {n}" for dc, n in sorted(small.items()))
        )
        return errors
    seen = set()
    for node in nodes:
        if not node.is_broker or not node.properties:
            continue  # not in this run's play (--limit): its configuration is not being changed
        for rf_key, isr_key in REPLICATION_FACTORS.items():
            rf = _as_int(node.properties.get(rf_key))
            if rf is None:
                msg = f"{node.host}: {rf_key}={node.properties.get(rf_key)!r} is not an integer"
            elif not low <= rf <= high:
                msg = (
                    f"{node.host}: {rf_key}={rf} cannot put {REPLICAS_PER_DC} replicas in each broker DC "
                    f"({', '.join(f'{dc}: {len(h)} brokers' for dc, h in sorted(dcs.items()))}); "
                    f"it must be between {low} and {high}"
                )
            else:
                msg = _check_min_isr(node, rf_key, rf, isr_key)
            if msg and msg not in seen:
                seen.add(msg)
                errors.append(msg)
    return errors


def _check_min_isr(node, rf_key, rf, isr_key):
    if isr_key is None:
        return None
    isr = _as_int(node.properties.get(isr_key))
    if isr is None or isr < 1:
        return f"{node.host}: {isr_key}={node.properties.get(isr_key)!r} is not a positive integer"
    if isr >= rf:
        return (
            f"{node.host}: {isr_key}={isr} must be below {rf_key}={rf}, "
            "or losing a single replica blocks every acks=all write"
        )
    return None


def _hosts(hosts, shown=4):
    hosts = sorted(hosts)
    more = f" and {len(hosts) - shown} more" if len(hosts) > shown else ""
    return ", ".join(hosts[:shown]) + more


def check_install(install_by_host):
    """An archive fetched by URL must carry a checksum; something must be installed.

    The settings usually come from one group_vars file, so each problem is
    reported once with the hosts it affects.
    """
    no_source, no_checksum = [], []
    for host, install in install_by_host.items():
        src, url, checksum = (install.get(k) for k in ("src", "url", "checksum"))
        if not src and not url:
            no_source.append(host)
        elif url and not src and not checksum:
            no_checksum.append(host)
    errors = []
    if no_source:
        errors.append(f"{_hosts(no_source)}: set kafka_archive_url (with kafka_archive_checksum) or kafka_archive_src")
    if no_checksum:
        errors.append(
            f"{_hosts(no_checksum)}: kafka_archive_url is set but kafka_archive_checksum is empty; "
            "give the release's checksum (e.g. 'sha512:...') so a tampered download is refused"
        )
    return errors


RULES = (check_roles, check_node_ids, check_racks, check_controller_quorum, check_broker_dcs, check_replication)


def validate(node_dicts, install_by_host=None):
    """Return every problem with the inventory, as messages; empty when it is valid."""
    nodes = [Node.from_dict(d) for d in node_dicts]
    errors = []
    for rule in RULES:
        errors.extend(rule(nodes))
    errors.extend(check_install(install_by_host or {}))
    return errors


def check_declarations(node_dicts, declared_topics, replication_factor, declared_quotas, throttle):
    """Problems with kafka_topics, kafka_quotas and the replication throttle, found without a cluster.

    Each topic's replication factor is checked against the inventory's broker
    DCs, so RF larger than the brokers is refused before any host is touched.
    """
    nodes = [Node.from_dict(d) for d in node_dicts]
    by_dc = {}
    for node in nodes:
        if node.is_broker:
            by_dc.setdefault(node.rack, []).append(_as_int(node.node_id))
    errors = []
    try:
        for name, topic in topics.normalize(declared_topics, replication_factor).items():
            try:
                placement.check_shape(by_dc, topic["replication_factor"])
            except placement.PlacementError as exc:
                errors.append(f"kafka_topics: topic '{name}': {exc}")
    except topics.TopicError as exc:
        errors.append(f"kafka_topics: {exc}")
    try:
        quotas.normalize(declared_quotas)
        if throttle:
            quotas.throttle_plan(throttle.get("state"), throttle.get("rate"), {}, {})
    except quotas.QuotaError as exc:
        errors.append(f"kafka_quotas: {exc}")
    return errors


def summary(node_dicts):
    """A short description of the topology, for the preflight's success message."""
    nodes = [Node.from_dict(d) for d in node_dicts]
    voters = Counter(n.rack for n in nodes if n.is_controller)
    brokers = Counter(n.rack for n in nodes if n.is_broker)
    order = sorted(voters, key=lambda dc: (-voters[dc], dc))
    split = "-".join(str(voters[dc]) for dc in order)
    return (
        f"{sum(voters.values())} controller voters over {len(voters)} DCs ({split}: "
        + ", ".join(f"{dc}={voters[dc]}" for dc in order)
        + f"); {sum(brokers.values())} brokers in "
        + ", ".join(f"{dc}={n}" for dc, n in sorted(brokers.items()))
    )
