"""Composes a node's server.properties from the cluster model and the node role's settings.

The stretch-cluster settings are derived here, in one place, so the validator
sees exactly what a node runs; the template writes them through
module_utils/java_properties.py, which escapes what the file format would
take for syntax (the stretch.kafka.java_properties filter).
Operator overrides are applied last: kafka_node_properties on every node, then
kafka_node_broker_properties or kafka_node_controller_properties by process role.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import java_properties, nodes, security

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"

# Defaults for a link of up to about 100 ms round trip between the DCs, each
# measured before and after by `make bench-wan` (docs/wan.md#the-roles-defaults-for-a-wan);
# the operator's overrides still win. By process role.
WAN_DEFAULTS = {
    "all": {
        # Let the kernel size each socket's buffers to its bandwidth x RTT
        # (autotuning): Kafka's fixed 100 KiB caps a connection at 1 MB/s per
        # 100 ms of round trip.
        "socket.send.buffer.bytes": -1,
        "socket.receive.buffer.bytes": -1,
    },
    "broker": {
        # Kafka's fixed 64 KiB caps a far follower at about 1.3 MB/s per leader at 100 ms.
        "replica.socket.receive.buffer.bytes": -1,
        # A far follower learns the high watermark only in its next fetch's
        # answer, which waits for the leader's next append at most this long:
        # the delay of a follower read from a quiet leader.
        "replica.fetch.wait.max.ms": 100,
        # A follower told of its new leader before that leader has taken the
        # partition over (a lost DC: the survivors apply the fencing one
        # partition at a time) gets an error and waits this long to fetch
        # again; until it does, an acks=all write there is not acknowledged.
        "replica.fetch.backoff.ms": 100,
        # Heartbeats every second, so a lost DC's brokers are fenced (and
        # their partitions led and writable elsewhere) after the session
        # timeout below, not 9 s.
        "broker.heartbeat.interval.ms": 1000,
    },
    "controller": {
        "broker.session.timeout.ms": 6000,
    },
}


def server_properties(node, cluster):
    """Return the ordered server.properties of one node.

    node: the node's record (module_utils/nodes.py), plus log_dirs (list) and metadata_log_dir.
    cluster: listeners ({NAME: {port, protocol, bind_host?, properties?, client_properties?}}),
          controller_listener, inter_broker_listener, controllers (the controllers'
          records), replication_factor, min_insync_replicas, tls ({keystore,
          truststore} on the node, or None), sasl_mechanism,
          authorizer ({super_users}, or None for no authorizer),
          properties, broker_properties, controller_properties (overrides).
    """
    listeners = cluster["listeners"]
    broker_names = nodes.bound_listeners(listeners, cluster["controller_listener"], ["broker"])
    if cluster["inter_broker_listener"] not in broker_names:
        raise ValueError(
            f"kafka_inter_broker_listener={cluster['inter_broker_listener']!r} is not a broker listener "
            f"of kafka_listeners ({', '.join(broker_names)})"
        )
    roles = [r for r in nodes.ROLES if r in node["roles"]]
    bound = nodes.bound_listeners(listeners, cluster["controller_listener"], roles)

    props = {
        "node.id": node["node_id"],
        "process.roles": roles,
        "controller.listener.names": cluster["controller_listener"],
        "controller.quorum.bootstrap.servers": nodes.bootstrap(cluster["controllers"], cluster["controller_listener"]),
        "listener.security.protocol.map": [f"{n}:{listeners[n]['protocol']}" for n in listeners],
        "listeners": [f"{n}://{listeners[n].get('bind_host', '0.0.0.0')}:{listeners[n]['port']}" for n in bound],
        "advertised.listeners": [f"{n}://{node['listeners'][n]['endpoint']}" for n in bound],
        # A DC loss must never elect a replica that missed acknowledged writes;
        # with ELR the controllers enforce both settings, so they carry them too.
        "unclean.leader.election.enable": False,
        "min.insync.replicas": cluster["min_insync_replicas"],
    }
    if "broker" in roles:
        props.update(
            {
                "broker.rack": node["dc"],
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
    # Every node carries the security of every listener: a broker is the
    # controller listener's client, and a controller checks the brokers' certificates.
    props.update(
        security.server_properties(
            listeners, cluster.get("tls"), cluster.get("sasl_mechanism", "SCRAM-SHA-512"), cluster.get("authorizer")
        )
    )
    for name in bound:
        for key, value in (listeners[name].get("properties") or {}).items():
            props[f"listener.name.{name.lower()}.{key}"] = value

    for role in ("all", *roles):
        props.update(WAN_DEFAULTS.get(role, {}))
    props.update(cluster.get("properties") or {})
    for role in roles:
        props.update(cluster.get(f"{role}_properties") or {})
    return {key: java_properties.text(value) for key, value in props.items()}


def node_server_properties(model, host, node):
    """The server.properties of the node host, from the cluster model (module_utils/model.py).

    node: the node role's settings: log_dirs, metadata_log_dir, tls ({keystore,
    truststore} on the node), properties, broker_properties, controller_properties.
    """
    record = dict(model["node"][host], log_dirs=node["log_dirs"], metadata_log_dir=node["metadata_log_dir"])
    cluster = {
        "listeners": model["listeners"],
        "controller_listener": model["listener"]["controller"]["name"],
        "inter_broker_listener": model["listener"]["inter_broker"]["name"],
        "controllers": model["controllers"],
        "replication_factor": model["replication_factor"],
        "min_insync_replicas": model["min_insync_replicas"],
        "properties": node.get("properties"),
        "broker_properties": node.get("broker_properties"),
        "controller_properties": node.get("controller_properties"),
        "tls": node["tls"] if model["tls"] else None,
        "sasl_mechanism": model["sasl_mechanism"],
        "authorizer": {"super_users": model["super_users"]} if model["tls"] else None,
    }
    return server_properties(record, cluster)


# What a node's own tools take of its server.properties to connect as the node.
TOOL_KEYS = re.compile(r"^ssl\.(keystore|truststore|endpoint)")


def tool_properties(server, protocol):
    """How the tools on a node connect as the node itself: the listener's protocol and the node's TLS files."""
    return {"security.protocol": protocol, **{k: v for k, v in server.items() if TOOL_KEYS.match(k)}}
