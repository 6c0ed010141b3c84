"""The one road from the inventory into Python: a typed record per node.

Every other piece (preflight, server.properties, the gates, the smoke test,
the admin modules) reads the cluster's nodes from these records, never from
hostvars, so a node's DC, id and address are looked up in one place, with one
default each:

    {"host":            inventory name,
     "node_id":         kafka_node_id as written (preflight refuses a bad one),
     "dc":              kafka_dc ("" when missing; preflight refuses it),
     "roles":           ["broker"] and/or ["controller"], from the two groups
                        (CONTROLLERS_GROUP, BROKERS_GROUP: fixed names, as every playbook's hosts: patterns say),
     "advertised_host": kafka_advertised_host, default the inventory name,
     "principal":       kafka_tls_principal, default the inventory name: its certificate's CN,
     "listeners":       {listener name: listener} of the listeners the node binds}

    listener: {"name", "host" (the advertised host), "port", "protocol",
               "endpoint": "host:port", as Kafka takes it (advertised.listeners,
               bootstrap lists); read, never split}

The DC is the one name for where a node runs. Brokers publish it as
broker.rack, and clients in that DC set client.rack to it; inside this
project it is always "dc".
"""

from __future__ import annotations

ROLES = ("broker", "controller")
# The inventory groups of the controllers (voters) and the brokers. Fixed: every playbook's hosts: pattern names
# them, and Ansible evaluates a play's hosts before any role or inventory variable could rename them. Groups
# of other names join through these as their children.
CONTROLLERS_GROUP = "kafka_controllers"
BROKERS_GROUP = "kafka_brokers"


class NodeError(ValueError):
    pass


def bound_listeners(listeners, controller_listener, roles):
    """Names of the listeners a node with these roles binds: the controller's, the brokers', or both."""
    if controller_listener not in listeners:
        raise NodeError(
            f"kafka_controller_listener={controller_listener!r} is not a key of kafka_listeners "
            f"({', '.join(sorted(listeners))})"
        )
    names = []
    if "controller" in roles:
        names.append(controller_listener)
    if "broker" in roles:
        names += [name for name in listeners if name != controller_listener]
    return names


def listener_port(node, name, spec):
    """The port of listener name, which node binds; NodeError naming both when it has none."""
    port = spec.get("port") if isinstance(spec, dict) else None
    if port is None or port == "":
        raise NodeError(
            f"{node}: listener {name} has no port: set kafka_listeners.{name}.port (and its protocol), "
            "e.g. {port: 9092, protocol: SASL_SSL}"
        )
    return port


def listener_record(name, host, spec, node=None):
    """The record of one listener a node binds, reached at host; node (default host) names it in an error."""
    port = listener_port(node or host, name, spec)
    return {
        "name": name,
        "host": host,
        "port": port,
        "protocol": spec.get("protocol"),
        "endpoint": f"{host}:{port}",
    }


def node_records(groups, hostvars, listeners, controller_listener):
    """One record per host of the controllers and brokers groups, controllers first, in inventory order.

    groups: {group: [hosts]}; hostvars: {host: {variable: value}} (Ansible's
    hostvars, or plain dicts in tests).
    """
    controllers = list(groups.get(CONTROLLERS_GROUP) or [])
    brokers = list(groups.get(BROKERS_GROUP) or [])
    records = []
    for host in dict.fromkeys(controllers + brokers):
        hv = hostvars[host]
        roles = [r for r, members in (("broker", brokers), ("controller", controllers)) if host in members]
        advertised = hv.get("kafka_advertised_host") or host
        records.append(
            {
                "host": host,
                "node_id": hv.get("kafka_node_id"),
                "dc": str(hv.get("kafka_dc") or ""),
                "roles": roles,
                "advertised_host": str(advertised),
                "principal": str(hv.get("kafka_tls_principal") or host),
                "listeners": {
                    name: listener_record(name, str(advertised), listeners[name], node=host)
                    for name in bound_listeners(listeners, controller_listener, roles)
                },
            }
        )
    return records


def named_hosts(hosts, shown=4):
    """The hosts, sorted, for a message: the first few by name and how many more."""
    hosts = sorted(hosts)
    more = f" and {len(hosts) - shown} more" if len(hosts) > shown else ""
    return ", ".join(hosts[:shown]) + more


def with_role(records, role):
    return [r for r in records if role in r["roles"]]


def bootstrap(records, listener):
    """host:port of every record that binds the listener, comma-separated: a bootstrap list."""
    return ",".join(r["listeners"][listener]["endpoint"] for r in records if listener in r["listeners"])


def dcs_of(records):
    """{node id: DC} of the records, ids as integers."""
    return {int(r["node_id"]): r["dc"] for r in records}


def by_dc(records):
    """{DC: [node ids]} of the records, in record order."""
    grouped = {}
    for record in records:
        grouped.setdefault(record["dc"], []).append(int(record["node_id"]))
    return grouped


def scrape_targets(records, port):
    """Prometheus file_sd target groups, one per node: its exporter, labelled node, dc and role.

    role is "broker", "controller", or "broker+controller" for a node with
    both; the alert rules match them with role=~"broker.*" and
    role=~".*controller".
    """
    return [
        {
            "targets": [f"{r['advertised_host']}:{int(port)}"],
            "labels": {"node": r["host"], "dc": r["dc"], "role": "+".join(sorted(r["roles"]))},
        }
        for r in records
    ]


# A TLS listener to probe each node's certificate on: SASL_SSL first, which
# asks no client certificate, then SSL (mutual TLS).
TLS_PROBE_ORDER = ("SASL_SSL", "SSL")


def tls_targets(records):
    """Prometheus file_sd target groups for a TLS probe (blackbox exporter) of each node's certificate.

    One target per node: the address of one of its TLS listeners (every
    listener of a node presents the same certificate), labelled node, dc,
    role and kafka_listener. A node without a TLS listener has no target.
    """
    out = []
    for r in records:
        bound = [lst for lst in r["listeners"].values() if lst["protocol"] in TLS_PROBE_ORDER]
        if not bound:
            continue
        chosen = min(bound, key=lambda lst: (TLS_PROBE_ORDER.index(lst["protocol"]), lst["name"]))
        labels = {"node": r["host"], "dc": r["dc"], "role": "+".join(sorted(r["roles"]))}
        out.append({"targets": [chosen["endpoint"]], "labels": dict(labels, kafka_listener=chosen["name"])})
    return out
