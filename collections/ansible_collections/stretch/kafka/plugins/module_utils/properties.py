"""Composes a node's server.properties from the inventory.

The stretch-cluster settings are derived here, in one place, so the template
only prints key=value lines and the validator sees exactly what a node runs.
Operator overrides are applied last: kafka_properties on every node, then
kafka_broker_properties or kafka_controller_properties by process role.
"""

from __future__ import annotations

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"


def _render(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def listener_roles(listeners, controller_listener):
    """Split the named listeners into the controller's and the broker's."""
    if controller_listener not in listeners:
        raise ValueError(
            f"kafka_controller_listener={controller_listener!r} is not a key of kafka_listeners "
            f"({', '.join(sorted(listeners))})"
        )
    broker = [name for name in listeners if name != controller_listener]
    return [controller_listener], broker


def endpoint(listeners, name, host):
    return f"{host}:{listeners[name]['port']}"


def listener_endpoints(nodes, listeners, name):
    """host:port of each node on the named listener, comma-separated (a bootstrap list)."""
    return ",".join(endpoint(listeners, name, n["advertised_host"]) for n in nodes)


def server_properties(node, cluster):
    """Return the ordered server.properties of one node.

    node: node_id, roles (list of 'broker'/'controller'), rack, advertised_host,
          log_dirs (list), metadata_log_dir.
    cluster: listeners ({NAME: {port, protocol, bind_host?, properties?, client_properties?}}),
          controller_listener, inter_broker_listener, controllers (list of
          {node_id, advertised_host}), replication_factor, min_insync_replicas,
          properties, broker_properties, controller_properties (overrides).
    """
    listeners = cluster["listeners"]
    controller_names, broker_names = listener_roles(listeners, cluster["controller_listener"])
    if cluster["inter_broker_listener"] not in broker_names:
        raise ValueError(
            f"kafka_inter_broker_listener={cluster['inter_broker_listener']!r} is not a broker listener "
            f"of kafka_listeners ({', '.join(broker_names)})"
        )
    roles = [r for r in ("broker", "controller") if r in node["roles"]]
    bound = (controller_names if "controller" in roles else []) + (broker_names if "broker" in roles else [])

    props = {
        "node.id": node["node_id"],
        "process.roles": roles,
        "controller.listener.names": cluster["controller_listener"],
        "controller.quorum.bootstrap.servers": listener_endpoints(
            cluster["controllers"], listeners, cluster["controller_listener"]
        ),
        "listener.security.protocol.map": [f"{n}:{listeners[n]['protocol']}" for n in listeners],
        "listeners": [f"{n}://{listeners[n].get('bind_host', '0.0.0.0')}:{listeners[n]['port']}" for n in bound],
        "advertised.listeners": [f"{n}://{endpoint(listeners, n, node['advertised_host'])}" for n in bound],
        # A DC loss must never elect a replica that missed acknowledged writes;
        # with ELR the controllers enforce both settings, so they carry them too.
        "unclean.leader.election.enable": False,
        "min.insync.replicas": cluster["min_insync_replicas"],
    }
    if "broker" in roles:
        props.update(
            {
                "broker.rack": node["rack"],
                "inter.broker.listener.name": cluster["inter_broker_listener"],
                "replica.selector.class": RACK_AWARE_SELECTOR,
                "default.replication.factor": cluster["replication_factor"],
                "offsets.topic.replication.factor": cluster["replication_factor"],
                "transaction.state.log.replication.factor": cluster["replication_factor"],
                "transaction.state.log.min.isr": cluster["min_insync_replicas"],
                # Topics are declared, not created by a typo in a client.
                "auto.create.topics.enable": False,
                "log.dirs": node["log_dirs"],
            }
        )
    # Every node keeps its cluster metadata (and meta.properties) in one
    # known directory, which is how the roles tell a formatted node.
    props["metadata.log.dir"] = node["metadata_log_dir"]
    if "broker" not in roles:
        props["log.dirs"] = node["metadata_log_dir"]
    for name in bound:
        for key, value in (listeners[name].get("properties") or {}).items():
            props[f"listener.name.{name.lower()}.{key}"] = value

    props.update(cluster.get("properties") or {})
    for role in roles:
        props.update(cluster.get(f"{role}_properties") or {})
    return {key: _render(value) for key, value in props.items()}


def client_properties(listeners, client_listener, extra=None):
    """Connection settings for the playbooks' own tools, on the given listener."""
    props = {"security.protocol": listeners[client_listener]["protocol"]}
    props.update(listeners[client_listener].get("client_properties") or {})
    props.update(extra or {})
    return {key: _render(value) for key, value in props.items()}
