"""Inventory validation for a 2.5-DC KRaft stretch cluster.

Every rule returns messages that name the offending host or variable, so an
operator can fix the inventory without reading this code. Nothing here talks
to a host: the checks run on the Ansible controller before any connection.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ansible_collections.stretch.kafka.plugins.module_utils import (
    acls,
    flags,
    placement,
    quotas,
    releases,
    security,
    topics,
)
from ansible_collections.stretch.kafka.plugins.module_utils import users as users_mod
from ansible_collections.stretch.kafka.plugins.module_utils.nodes import named_hosts

# Replicas a partition keeps in each broker DC, so that a consumer in either
# DC survives one broker failure without reading across DCs.
REPLICAS_PER_DC = 2
BROKER_DCS = 2
MIN_CONTROLLER_DCS = 3

MAX_NODE_ID = 2**31 - 1
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
LISTENER_NAME = re.compile(r"[A-Za-z0-9_]+")
NON_ROUTABLE = ("", "0.0.0.0", "::", "[::]")
# Names the roles write into server.properties and every client's settings
# as they are: a DC name becomes broker.rack and client.rack, compared byte
# for byte (and Kafka reads server.properties as ISO 8859-1, so a name
# outside ASCII would not be the clients' any more); a host is an address
# in advertised.listeners and the bootstrap lists. Each is held to a set no
# file format takes for syntax, matched whole (fullmatch: a `$` would let a
# final line break through).
DC_NAME = re.compile(r"[A-Za-z0-9._-]+")
DC_NAME_RULE = "letters, digits, '.', '_' and '-'"
HOST_NAME = re.compile(r"[A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\]")
HOST_NAME_RULE = "a host name or IPv4 address (letters, digits, '.', '_', '-') or an IPv6 address in brackets"

# Settings the roles derive from the inventory, and the variable that owns
# each: an override through kafka_node_properties (or its broker and
# controller siblings) would silently break what the stretch cluster promises.
DERIVED = {
    "node.id": "kafka_node_id",
    "broker.id": "kafka_node_id",
    "broker.rack": "kafka_dc",
    "process.roles": "the kafka_controllers and kafka_brokers groups",
    "listeners": "kafka_listeners",
    "advertised.listeners": "kafka_listeners and kafka_advertised_host",
    "listener.security.protocol.map": "kafka_listeners",
    "controller.listener.names": "kafka_controller_listener",
    "inter.broker.listener.name": "kafka_inter_broker_listener",
    "security.inter.broker.protocol": "kafka_inter_broker_listener",
    "controller.quorum.bootstrap.servers": "the kafka_controllers group",
    "controller.quorum.voters": "the kafka_controllers group",
    "replica.selector.class": "the roles (RackAwareReplicaSelector is what follower fetching needs)",
    "unclean.leader.election.enable": "the roles (never unclean: a DC loss must not elect a stale replica)",
    "min.insync.replicas": "kafka_min_insync_replicas",
    "transaction.state.log.min.isr": "kafka_min_insync_replicas",
    "default.replication.factor": "kafka_replication_factor",
    "offsets.topic.replication.factor": "kafka_replication_factor",
    "transaction.state.log.replication.factor": "kafka_replication_factor",
    "auto.create.topics.enable": "kafka_topics (topics are declared, placed by DC)",
    "log.dirs": "kafka_node_log_dirs",
    "log.dir": "kafka_node_log_dirs",
    "metadata.log.dir": "kafka_node_metadata_log_dir",
    "authorizer.class.name": "the roles (StandardAuthorizer: everything not allowed by kafka_acls is denied)",
    "allow.everyone.if.no.acl.found": "the roles (deny by default)",
    "super.users": "kafka_super_users (the nodes and the admin principal are added)",
    "ssl.principal.mapping.rules": "the roles (a certificate's CN is its principal)",
    "ssl.endpoint.identification.algorithm": "the roles (hostname verification stays on)",
    "ssl.client.auth": "kafka_listeners (an SSL listener is mutual TLS)",
    "ssl.key.password": "the roles (a node's key is unencrypted PKCS#8, readable by kafka only)",
    "sasl.enabled.mechanisms": "kafka_sasl_mechanism",
}
# Per-listener settings belong to the listener's own properties in kafka_listeners.
DERIVED_PREFIXES = {
    "listener.name.": "kafka_listeners (the listener's properties)",
    "ssl.keystore.": "kafka_tls_dir and the certificates",
    "ssl.truststore.": "kafka_tls_dir and the certificates",
}

# The lowest min.insync.replicas the roles set without the operator's say:
# with one, an acks=all write is acknowledged by its leader alone and lost
# with that broker (or its DC). The variable that accepts a lower one:
MIN_ISR = 2
MIN_ISR_OPT_IN = "kafka_min_insync_replicas_one_opt_in"

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
    dc: str
    roles: tuple
    properties: dict = field(default_factory=dict)
    listeners: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)

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
            dc=str(data.get("dc") or ""),
            roles=tuple(data.get("roles") or ()),
            properties=dict(data.get("properties") or {}),
            listeners=dict(data.get("listeners") or {}),
            overrides=dict(data.get("overrides") or {}),
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
        elif node_id is None or not 0 <= node_id <= MAX_NODE_ID:
            errors.append(f"{node.host}: kafka_node_id={node.node_id!r} is not an integer from 0 to {MAX_NODE_ID}")
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


def check_dcs(nodes):
    errors = []
    for node in nodes:
        if node.dc:
            continue
        if node.is_broker:
            errors.append(
                f"broker {node.host} has no DC: set kafka_dc in the group_vars of its DC group "
                "(brokers publish it as broker.rack)"
            )
        else:
            errors.append(
                f"controller {node.host} has no DC: set kafka_dc so the quorum's spread over DCs can be checked"
            )
    return errors


def check_controller_quorum(nodes):
    """The voters must span three DCs and survive the loss of any one of them."""
    voters = [n for n in nodes if n.is_controller]
    if not voters:
        return ["no controllers: put at least three hosts, in three DCs, in the kafka_controllers group"]
    undecided = [n.host for n in voters if not n.dc]
    if undecided:
        # Judged without them, the spread would be wrong (a DC whose group
        # sets no kafka_dc would vanish from the quorum), so it is not judged.
        return [
            f"the quorum's spread over DCs cannot be judged: controller(s) {', '.join(undecided)} have no "
            "kafka_dc; set it in the group_vars of each one's DC group"
        ]
    per_dc = Counter(n.dc for n in voters)
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
            hosts = ", ".join(n.host for n in voters if n.dc == dc)
            errors.append(
                f"DC {dc} holds {count} of {total} controller voters ({hosts}): losing it leaves "
                f"{total - count}, not a majority; spread the voters so no DC holds half or more (e.g. 2-2-1)"
            )
    return errors


def broker_dcs(nodes):
    """Brokers per DC, as {dc: [hosts]}."""
    dcs = defaultdict(list)
    for node in nodes:
        if node.is_broker and node.dc:
            dcs[node.dc].append(node.host)
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


def check_install(install_by_host):
    """An archive fetched by URL must carry a checksum, and so must the metrics agent (install's
    "metrics_agent": {enabled, src, url, checksum}) when it is downloaded; something must be installed.

    The settings usually come from one group_vars file, so each problem is
    reported once with the hosts it affects.
    """
    no_source, no_checksum, bad_checksum = [], [], defaultdict(list)
    for host, install in install_by_host.items():
        src, url, checksum = (install.get(k) for k in ("src", "url", "checksum"))
        if not src and not url:
            no_source.append(host)
        elif url and not src and not checksum:
            no_checksum.append(host)
        elif url and not src:
            problem = releases.checksum_problem(checksum, "kafka_node_archive_checksum")
            if problem:
                bad_checksum[problem].append(host)
        # The metrics agent, downloaded unless it comes from the controller: get_url checks nothing when its
        # checksum is empty.
        agent = install.get("metrics_agent") or {}
        if agent.get("enabled") and not agent.get("src"):
            problem = releases.checksum_problem(agent.get("checksum"), "kafka_node_metrics_agent_checksum")
            if problem:
                bad_checksum[problem].append(host)
    errors = [f"{named_hosts(hosts)}: {problem}" for problem, hosts in sorted(bad_checksum.items())]
    if no_source:
        errors.append(
            f"{named_hosts(no_source)}: set kafka_node_archive_url (with kafka_node_archive_checksum) "
            "or kafka_node_archive_src"
        )
    by_archive = defaultdict(list)
    for host in no_checksum:
        by_archive[install_by_host[host].get("archive") or ""].append(host)
    for archive, hosts in sorted(by_archive.items()):
        known = ", ".join(sorted(releases.PUBLISHED_SHA512))
        what = (
            f"the collection knows no published checksum of {archive} (kafka_node_version and "
            f"kafka_node_scala_version; it knows {known})"
            if archive and archive not in releases.PUBLISHED_SHA512
            else "kafka_node_archive_url is set but kafka_node_archive_checksum is empty"
        )
        errors.append(
            f"{named_hosts(hosts)}: {what}: set kafka_node_archive_checksum to the release's checksum "
            "('sha512:...', from the .sha512 file published beside it) so a tampered download is refused"
        )
    return errors


def check_dc_names(nodes):
    """DC names outside the safe set, and names that Kafka would take as different racks while an operator
    reads them as one."""
    errors = []
    spelled = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        if node.dc and not DC_NAME.fullmatch(node.dc):
            errors.append(
                f"{node.host}: kafka_dc={node.dc!r} is not a DC name the roles can write: use {DC_NAME_RULE} "
                "(it becomes broker.rack and every client's client.rack, compared byte for byte)"
            )
        spelled[node.dc.strip().lower()][node.dc].append(node.host)
    for forms in spelled.values():
        if len(forms) > 1:
            listing = "; ".join(f"{dc!r} ({named_hosts(hosts)})" for dc, hosts in sorted(forms.items()))
            errors.append(
                f"kafka_dc values differ only in case or spacing: {listing}; Kafka compares racks exactly, "
                "so these would be different DCs"
            )
    return errors


def check_dc_groups(nodes, groups):
    """A host in the groups of two DCs, or in a DC's group with another kafka_dc, has an ambiguous DC.

    A DC's group is the inventory group named after it (group_vars/<dc>.yml sets kafka_dc).
    """
    if not groups:
        return []
    dcs = {n.dc for n in nodes if n.dc}
    errors = []
    for node in nodes:
        member_of = sorted(g for g in dcs if node.host in (groups.get(g) or ()))
        if len(member_of) > 1:
            errors.append(
                f"{node.host} is in the groups of {len(member_of)} DCs ({', '.join(member_of)}): its DC is "
                f"ambiguous (it resolved to kafka_dc={node.dc!r}); put each host in one DC group"
            )
        elif member_of and member_of[0] != node.dc:
            errors.append(
                f"{node.host} is in the group of DC {member_of[0]} but its kafka_dc is {node.dc!r}: its DC is "
                "ambiguous; set kafka_dc in one place"
            )
    return errors


def check_listeners(listeners):
    """Listener settings Kafka refuses at start."""
    errors = []
    if not isinstance(listeners, dict) or not listeners:
        return ["kafka_listeners must map listener names to {port, protocol}"]
    ports = defaultdict(list)
    for name, spec in listeners.items():
        where = f"kafka_listeners.{name}"
        if not LISTENER_NAME.fullmatch(str(name)):
            errors.append(f"{where}: a listener name is letters, digits and '_' (Kafka refuses {name!r})")
        if not isinstance(spec, dict):
            errors.append(f"{where} must be a mapping with port and protocol")
            continue
        bind_host = spec.get("bind_host")
        if bind_host is not None and bind_host != "" and not HOST_NAME.fullmatch(str(bind_host)):
            errors.append(f"{where}.bind_host={bind_host!r} is not {HOST_NAME_RULE}")
        port = _as_int(spec.get("port"))
        if port is None or not 1 <= port <= 65535:
            errors.append(f"{where}.port={spec.get('port')!r} is not a port from 1 to 65535")
        else:
            ports[port].append(str(name))
        if spec.get("protocol") not in PROTOCOLS:
            errors.append(f"{where}.protocol={spec.get('protocol')!r} is not one of {', '.join(PROTOCOLS)}")
    for port, names in sorted(ports.items()):
        if len(names) > 1:
            errors.append(f"kafka_listeners: {', '.join(names)} listen on the same port {port}")
    return errors


def check_endpoints(nodes):
    """Two nodes that advertise one address and port, or an address no client can reach."""
    errors = []
    owners = defaultdict(list)
    for node in nodes:
        hosts = {listener["host"] for listener in node.listeners.values()}
        errors.extend(
            f"{node.host}: its advertised address {host!r} (kafka_advertised_host, or the inventory name) is not "
            f"{HOST_NAME_RULE}"
            for host in sorted(hosts)
            if host not in NON_ROUTABLE and not HOST_NAME.fullmatch(host)
        )
        for name, listener in sorted(node.listeners.items()):
            endpoint = listener["endpoint"]
            if listener["host"] in NON_ROUTABLE:
                errors.append(
                    f"{node.host}: listener {name} would advertise {endpoint}; set kafka_advertised_host to an "
                    "address other nodes and clients can reach"
                )
            owners[endpoint].append(node.host)
    for endpoint, hosts in sorted(owners.items()):
        if len(set(hosts)) > 1:
            errors.append(f"{', '.join(sorted(set(hosts)))} all advertise {endpoint}: set kafka_advertised_host apart")
    return errors


def check_overrides(nodes):
    """Overrides of the settings the roles derive, which the stretch guarantees depend on."""
    errors = []
    seen = set()
    for node in nodes:
        for variable, overrides in sorted(node.overrides.items()):
            for key in sorted(overrides or {}):
                owner = _owner(key)
                message = owner and (
                    f"{node.host}: {variable} sets {key}, which the roles derive from {owner}; set {owner} instead"
                )
                if message and message not in seen:
                    seen.add(message)
                    errors.append(message)
    return errors


def _owner(key):
    if key in DERIVED:
        return DERIVED[key]
    return next((owner for prefix, owner in DERIVED_PREFIXES.items() if key.startswith(prefix)), None)


def check_paths(nodes):
    """Data directories Kafka needs, as absolute paths."""
    errors = []
    for node in nodes:
        if "log.dirs" not in node.properties:
            continue  # not in this run's play (--limit): its configuration is not being changed
        dirs = [d for d in str(node.properties["log.dirs"]).split(",") if d]
        if not dirs:
            errors.append(f"{node.host}: kafka_node_log_dirs is empty; a broker needs at least one data directory")
        for path in [*dirs, node.properties.get("metadata.log.dir", "")]:
            if path and not str(path).startswith("/"):
                errors.append(f"{node.host}: {path!r} is not an absolute path (kafka_node_log_dirs, "
                              "kafka_node_metadata_log_dir)")  # fmt: skip
    return errors


RULES = (
    check_roles,
    check_node_ids,
    check_dcs,
    check_dc_names,
    check_controller_quorum,
    check_broker_dcs,
    check_replication,
    check_endpoints,
    check_overrides,
    check_paths,
)


def validate(
    node_dicts, install_by_host=None, groups=None, listeners=None, min_insync_replicas=None, min_insync_opt_in=False
):
    """Return every problem with the inventory, as messages; empty when it is valid.

    groups: the inventory's {group: [hosts]}, to find hosts in two DC groups.
    listeners: kafka_listeners, judged as Kafka would at start.
    min_insync_replicas: {variable: value} of the cluster's min.insync.replicas
    settings, held to min_insync_problems() (min_insync_opt_in: the operator's
    acceptance of 1).
    """
    nodes = [Node.from_dict(d) for d in node_dicts]
    errors = min_insync_problems(min_insync_replicas or {}, min_insync_opt_in)
    if listeners is not None:
        errors.extend(check_listeners(listeners))
    for rule in RULES:
        errors.extend(rule(nodes))
    errors.extend(check_dc_groups(nodes, groups))
    errors.extend(check_install(install_by_host or {}))
    return errors


def min_insync_problems(values, opt_in=False):
    """Why each min.insync.replicas setting may not be used, as messages naming its variable.

    values: {variable: value}, e.g. {"kafka_min_insync_replicas": 2}; a value
    of None is not set and not judged. Below 1 is refused always (Kafka
    refuses it); 1 only without the opt-in (MIN_ISR_OPT_IN), read strictly as
    a boolean (module_utils/flags.py): "false", as an extra var gives it, is
    false, and a value that is no boolean is refused.
    """
    errors = []
    try:
        opt_in = flags.flag(opt_in, MIN_ISR_OPT_IN)
    except flags.FlagError as exc:
        errors.append(str(exc))
        opt_in = False
    for variable, value in values.items():
        if value is None:
            continue
        isr = _as_int(value)
        if isr is None or isr < 1:
            errors.append(f"{variable}={value!r} is not a positive whole number")
        elif isr < MIN_ISR and not opt_in:
            errors.append(
                f"{variable}={isr}: an acks=all write would be acknowledged by one replica alone and lost with its "
                f"broker; set it to {MIN_ISR} or more, or set {MIN_ISR_OPT_IN}: true to accept that"
            )
    return errors


def _topic_min_isr_problems(name, rf, own, inherited):
    """Why a topic's effective min.insync.replicas (its own, else the cluster's it inherits) blocks its writes."""
    isr = _as_int(own if own is not None else inherited)
    if isr is None or isr < rf:
        return []
    source = "" if own is not None else " (the cluster's, kafka_admin_min_isr_target, which it inherits)"
    why = (
        f"at {isr}, losing a single replica blocks every acks=all write"
        if isr == rf
        else f"at {isr}, no acks=all write is ever accepted"
    )
    return [
        f"kafka_topics: topic '{name}': min.insync.replicas={isr}{source} must be below its replication factor {rf}: "
        f"{why}"
    ]


def check_declarations(
    node_dicts,
    declared_topics,
    replication_factor,
    declared_quotas,
    throttle,
    users=None,
    acl_list=None,
    mechanism=None,
    min_insync_replicas=None,
    min_insync_opt_in=False,
    cluster_min_insync_replicas=None,
):
    """Problems with kafka_topics, kafka_quotas, the throttle, kafka_users and kafka_acls, found without a cluster.

    Each topic's replication factor is checked against the inventory's broker
    DCs, so RF larger than the brokers is refused before any host is touched;
    a topic's min.insync.replicas, and the min.insync.replicas settings given
    as {variable: value}, are held to min_insync_problems(). A topic's
    effective min.insync.replicas (its own, or cluster_min_insync_replicas,
    the cluster-wide value a converge keeps, which it inherits) must be below
    its replication factor.
    """
    nodes = [Node.from_dict(d) for d in node_dicts]
    by_dc = {}
    for node in nodes:
        if node.is_broker:
            by_dc.setdefault(node.dc, []).append(_as_int(node.node_id))
    errors = min_insync_problems(min_insync_replicas or {}, min_insync_opt_in)
    try:
        for name, topic in topics.normalize(declared_topics, replication_factor).items():
            try:
                placement.check_shape(by_dc, topic["replication_factor"])
            except placement.PlacementError as exc:
                errors.append(f"kafka_topics: topic '{name}': {exc}")
            own = topic["configs"].get("min.insync.replicas")
            own_problems = min_insync_problems(
                {f"kafka_topics: topic '{name}': min.insync.replicas": own}, min_insync_opt_in
            )
            errors += own_problems or _topic_min_isr_problems(
                name, topic["replication_factor"], own, cluster_min_insync_replicas
            )
    except topics.TopicError as exc:
        errors.append(f"kafka_topics: {exc}")
    try:
        quotas.normalize(declared_quotas)
        if throttle:
            quotas.throttle_plan(throttle.get("state"), throttle.get("rate"), {}, {})
    except quotas.QuotaError as exc:
        errors.append(f"kafka_quotas: {exc}")
    try:
        # The messages name users, never their passwords.
        users_mod.normalize(users, mechanism or security.MECHANISMS[0])
    except users_mod.UserError as exc:
        errors.append(f"kafka_users: {exc}")
    try:
        acls.normalize(acl_list)
    except acls.AclError as exc:
        errors.append(f"kafka_acls: {exc}")
    return errors


def summary(node_dicts):
    """A short description of the topology, for the preflight's success message."""
    nodes = [Node.from_dict(d) for d in node_dicts]
    voters = Counter(n.dc for n in nodes if n.is_controller)
    brokers = Counter(n.dc for n in nodes if n.is_broker)
    order = sorted(voters, key=lambda dc: (-voters[dc], dc))
    split = "-".join(str(voters[dc]) for dc in order)
    return (
        f"{sum(voters.values())} controller voters over {len(voters)} DCs ({split}: "
        + ", ".join(f"{dc}={voters[dc]}" for dc in order)
        + f"); {sum(brokers.values())} brokers in "
        + ", ".join(f"{dc}={n}" for dc, n in sorted(brokers.items()))
    )
