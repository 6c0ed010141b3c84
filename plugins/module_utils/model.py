"""The cluster as the inventory describes it, compiled once: the model every role, template, test and tool reads.

The kafka role compiles it (the stretch.kafka.cluster filter in
roles/kafka/vars/main.yml) from the inventory's groups, every node's host
variables and the cluster's settings. Nothing in the roles derives a node's
DC, a listener's address or a client's settings again: they read a field.
The tests and tools (testkit/cluster.py) compile the same model, with the
settings of the role's kafka_cluster, and add only their users' credentials
to its client settings.

settings (the kafka role's variables, by purpose):
    listeners                          kafka_listeners ({name: {port, protocol, ...}})
    controller_listener, inter_broker_listener, client_listener, admin_listener
                                       listener names, by what they are for
    sasl_mechanism                     the SCRAM mechanism of SASL listeners
    pki_dir                            the CA's directory on the Ansible controller
    admin_principal, admin_client_config, super_users
    replication_factor, min_insync_replicas, metrics_port
    wan_link                           the link between the broker DCs ({bandwidth_mbit, rtt_ms})
    topics, acls                       the operator's declarations
    canary_user, canary_topic, canary_topic_partitions, probe_topic, probe_topic_partitions,
    stream_user, stream_group, stream_topics
                                       what the roles' own clients need declared

The model (plain data):
    nodes         every node's record (module_utils/nodes.py), controllers first, in inventory order
    node          {inventory name: record}
    controllers   the controllers' records: the quorum's voters
    brokers       the brokers' records
    dcs           {DC: {"controllers": [hosts], "brokers": [hosts],
                        "bootstrap_servers": its own brokers on the client listener}}
    listeners     kafka_listeners as given
    listener      {"controller" | "inter_broker" | "client" | "admin": {"name", "port", "protocol", ...}}
    bootstrap     {"client", "admin", "controllers"}: host:port lists of every broker (or controller)
    client        how a client reaches the cluster, without credentials: {"protocol", "ca", "mechanism"}
                  (module_utils/security.py renders it for each client library)
    clients       {broker DC: the settings of a client in that DC, without credentials
                   (librdkafka and Java names): bootstrap.servers, client.rack, security.*}
    admin         the admin-protocol modules' connection: {"bootstrap_servers",
                  "bootstrap_controllers", "client_config" (kafka-python: the derived
                  settings and admin_client_config's others; ModelError when it
                  would override a derived one)}
    tls           whether any listener uses TLS
    pki           {"dir", "trusted", "admin_cert", "admin_key"} on the Ansible controller
    super_users   super.users: every node's principal, the admin's and the declared ones
    sasl_mechanism, replication_factor, min_insync_replicas, metrics_port, wan_link
    declared      {"topics", "acls"}: the operator's, with those the roles' own clients need

A node's DC travels: kafka_dc (inventory) -> nodes[].dc (here) -> broker.rack
(module_utils/properties.py); and -> clients[dc]["client.rack"].
"""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.module_utils import nodes, security

PURPOSES = {
    "controller": "kafka_controller_listener",
    "inter_broker": "kafka_inter_broker_listener",
    "client": "kafka_client_listener",
    "admin": "kafka_adminclient_listener",
}


class ModelError(ValueError):
    pass


def _listener(listeners, purpose, name):
    if name not in listeners:
        known = ", ".join(sorted(listeners))
        raise ModelError(f"{PURPOSES[purpose]}={name!r} is not a key of kafka_listeners ({known})")
    spec = listeners[name]
    if not isinstance(spec, dict):
        raise ModelError(f"kafka_listeners.{name} must be a mapping such as {{port: 9092, protocol: SASL_SSL}}")
    return {"name": name, **spec}


def _stream_acls(settings):
    """The active/active streaming job's (roles/spark_stream): read its topics and use its group, whose session
    timeout and heartbeat interval (KIP-848 group configs) it sets at start. No topics: no job, no ACLs."""
    topics = list(settings.get("stream_topics") or [])
    if not topics:
        return []
    user = f"User:{settings['stream_user']}"
    return [
        *(
            {"principal": user, "resource": {"type": "topic", "name": t}, "operations": ["read", "describe"]}
            for t in topics
        ),
        {
            "principal": user,
            "resource": {"type": "group", "name": settings["stream_group"]},
            "operations": ["read", "describe", "describe_configs", "alter_configs"],
        },
    ]


def _declared(settings):
    """The declared topics and ACLs, with the canary's and the failover probe's unless the operator declares them,
    and the least ACLs of the roles' own clients: the canary's (the smoke test) and the streaming job's."""
    topics = list(settings.get("topics") or [])
    names = {t.get("name") for t in topics if isinstance(t, dict)}
    builtin = [
        {"name": settings["canary_topic"], "partitions": int(settings["canary_topic_partitions"])},
        {
            "name": settings["probe_topic"],
            "partitions": int(settings["probe_topic_partitions"]),
            "configs": {"retention.ms": 3600000},
        },
    ]
    user = f"User:{settings['canary_user']}"
    acls = [
        {
            "principal": user,
            "resource": {"type": "topic", "name": settings["canary_topic"]},
            "operations": ["read", "write", "describe"],
        },
        # The smoke test's own consumer groups, and its Spark reads': a batch read's consumers name their
        # group spark-kafka-relation-<uuid> (a streaming query's, spark-kafka-source-, are another user's).
        {
            "principal": user,
            "resource": {"type": "group", "name": "kafka-smoke", "pattern": "prefixed"},
            "operations": ["read", "describe"],
        },
        {
            "principal": user,
            "resource": {"type": "group", "name": "spark-kafka-relation-", "pattern": "prefixed"},
            "operations": ["read", "describe"],
        },
    ]
    return {
        "topics": topics + [t for t in builtin if t["name"] not in names],
        "acls": list(settings.get("acls") or []) + acls + _stream_acls(settings),
    }


def cluster(groups, hostvars, settings):
    """The model of the cluster the inventory describes (see the module docstring for its fields).

    groups: {group: [hosts]}; hostvars: {host: {variable: value}}, Ansible's
    or plain dicts; settings: the kafka role's variables, by purpose.
    """
    listeners = settings["listeners"]
    if not isinstance(listeners, dict) or not listeners:
        raise ModelError("kafka_listeners must map listener names to {port, protocol}")
    listener = {purpose: _listener(listeners, purpose, settings[f"{purpose}_listener"]) for purpose in PURPOSES}
    records = nodes.node_records(groups, hostvars, listeners, listener["controller"]["name"])
    controllers = nodes.with_role(records, "controller")
    brokers = nodes.with_role(records, "broker")
    client_name, admin_name = listener["client"]["name"], listener["admin"]["name"]

    dcs = {}
    for record in records:
        dc = dcs.setdefault(record["dc"], {"controllers": [], "brokers": []})
        for role in record["roles"]:
            dc[f"{role}s"].append(record["host"])
    for dc, members in dcs.items():
        members["bootstrap_servers"] = nodes.bootstrap([r for r in brokers if r["dc"] == dc], client_name)

    pki_dir = settings["pki_dir"]
    pki = {
        "dir": pki_dir,
        "trusted": f"{pki_dir}/trusted.pem",
        "admin_cert": f"{pki_dir}/admin.crt",
        "admin_key": f"{pki_dir}/admin.key",
    }
    bootstrap = {
        "client": nodes.bootstrap(brokers, client_name),
        "admin": nodes.bootstrap(brokers, admin_name),
        "controllers": nodes.bootstrap(controllers, listener["controller"]["name"]),
    }
    client = {
        "protocol": listener["client"].get("protocol"),
        "ca": pki["trusted"],
        "mechanism": settings["sasl_mechanism"],
    }
    admin_client = {
        "protocol": listener["admin"].get("protocol"),
        "ca": pki["trusted"],
        "cert": pki["admin_cert"],
        "key": pki["admin_key"],
    }
    broker_dcs = sorted({r["dc"] for r in brokers})
    extra_admin_config = settings.get("admin_client_config") or {}
    refused = security.admin_config_problems(extra_admin_config)
    if refused:
        raise ModelError("; ".join(refused))
    return {
        "nodes": records,
        "node": {r["host"]: r for r in records},
        "controllers": controllers,
        "brokers": brokers,
        "dcs": dict(sorted(dcs.items())),
        "listeners": listeners,
        "listener": listener,
        "bootstrap": bootstrap,
        "client": client,
        "clients": {
            dc: {"bootstrap.servers": bootstrap["client"], "client.rack": dc, **security.librdkafka(client)}
            for dc in broker_dcs
        },
        "admin": {
            "bootstrap_servers": bootstrap["admin"],
            "bootstrap_controllers": bootstrap["controllers"],
            "client_config": {**security.kafka_python(admin_client), **extra_admin_config},
        },
        "tls": security.uses_tls(listeners),
        "pki": pki,
        "super_users": security.super_users(records, settings["admin_principal"], settings.get("super_users") or ()),
        "sasl_mechanism": settings["sasl_mechanism"],
        "replication_factor": settings["replication_factor"],
        "min_insync_replicas": settings["min_insync_replicas"],
        "metrics_port": settings["metrics_port"],
        "wan_link": settings.get("wan_link"),
        "declared": _declared(settings),
    }
