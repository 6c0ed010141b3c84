"""The cluster model: compiled once from the inventory, read by field everywhere after."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import model, properties

LISTENERS = {
    "CONTROLLER": {"port": 9093, "protocol": "SSL"},
    "REPLICATION": {"port": 9091, "protocol": "SSL"},
    "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
}
GROUPS = {
    "kafka_controllers": ["c1", "c2", "c3"],
    "kafka_brokers": ["b1", "b2", "b3", "b4"],
}
HOSTVARS = {
    "c1": {"kafka_node_id": 1, "kafka_dc": "fra1"},
    "c2": {"kafka_node_id": 2, "kafka_dc": "ams1"},
    "c3": {"kafka_node_id": 3, "kafka_dc": "ber1", "kafka_advertised_host": "10.0.3.10"},
    "b1": {"kafka_node_id": 101, "kafka_dc": "fra1"},
    "b2": {"kafka_node_id": 102, "kafka_dc": "fra1", "kafka_tls_principal": "kafka-b2"},
    "b3": {"kafka_node_id": 201, "kafka_dc": "ams1"},
    "b4": {"kafka_node_id": 202, "kafka_dc": "ams1"},
}
SETTINGS = {
    "listeners": LISTENERS,
    "controller_listener": "CONTROLLER",
    "inter_broker_listener": "REPLICATION",
    "client_listener": "CLIENT",
    "admin_listener": "REPLICATION",
    "admin_principal": "kafka-admin",
    "admin_client_config": {},
    "super_users": ["User:ops"],
    "sasl_mechanism": "SCRAM-SHA-512",
    "pki_dir": "/srv/pki",
    "replication_factor": 4,
    "min_insync_replicas": 2,
    "metrics_port": 7071,
    "topics": [{"name": "orders", "partitions": 12}],
    "acls": [],
    "canary_user": "kafka-smoke",
    "canary_topic": "smoke",
    "canary_topic_partitions": 4,
    "probe_topic": "stretch-probe",
    "probe_topic_partitions": 12,
    "stream_user": "kafka-stream",
    "stream_group": "stream-active",
    "stream_topics": [],
}


def cluster(**settings):
    return model.cluster(GROUPS, HOSTVARS, dict(SETTINGS, **settings))


def test_each_node_has_its_dc_roles_and_listeners_as_records():
    c = cluster()
    assert [n["host"] for n in c["nodes"]] == ["c1", "c2", "c3", "b1", "b2", "b3", "b4"]
    assert c["node"]["c3"]["listeners"] == {
        "CONTROLLER": {
            "name": "CONTROLLER",
            "host": "10.0.3.10",
            "port": 9093,
            "protocol": "SSL",
            "endpoint": "10.0.3.10:9093",
        }
    }
    assert c["node"]["b3"]["dc"] == "ams1"
    assert set(c["node"]["b3"]["listeners"]) == {"REPLICATION", "CLIENT"}
    assert [n["host"] for n in c["controllers"]] == ["c1", "c2", "c3"]
    assert [n["host"] for n in c["brokers"]] == ["b1", "b2", "b3", "b4"]


def test_the_dcs_hold_their_nodes_and_their_own_brokers_bootstrap_list():
    assert cluster()["dcs"] == {
        "ams1": {"controllers": ["c2"], "brokers": ["b3", "b4"], "bootstrap_servers": "b3:9092,b4:9092"},
        "ber1": {"controllers": ["c3"], "brokers": [], "bootstrap_servers": ""},
        "fra1": {"controllers": ["c1"], "brokers": ["b1", "b2"], "bootstrap_servers": "b1:9092,b2:9092"},
    }


def test_bootstrap_lists_by_purpose():
    assert cluster()["bootstrap"] == {
        "client": "b1:9092,b2:9092,b3:9092,b4:9092",
        "admin": "b1:9091,b2:9091,b3:9091,b4:9091",
        "controllers": "c1:9093,c2:9093,10.0.3.10:9093",
    }
    assert cluster()["listener"]["admin"] == {"name": "REPLICATION", "port": 9091, "protocol": "SSL"}


def test_a_client_in_each_broker_dc_sets_client_rack_to_it_and_carries_no_credentials():
    clients = cluster()["clients"]
    assert sorted(clients) == ["ams1", "fra1"], "the tiebreaker DC has no brokers to read from"
    assert clients["ams1"] == {
        "bootstrap.servers": "b1:9092,b2:9092,b3:9092,b4:9092",
        "client.rack": "ams1",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/srv/pki/trusted.pem",
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanism": "SCRAM-SHA-512",
    }
    assert cluster()["client"] == {"protocol": "SASL_SSL", "ca": "/srv/pki/trusted.pem", "mechanism": "SCRAM-SHA-512"}


def test_the_admin_connection_uses_the_admin_certificate_with_the_extra_settings_beside_it():
    admin = cluster(admin_client_config={"request_timeout_ms": 60000, "api_version_auto_timeout_ms": 5000})["admin"]
    assert admin == {
        "bootstrap_servers": "b1:9091,b2:9091,b3:9091,b4:9091",
        "bootstrap_controllers": "c1:9093,c2:9093,10.0.3.10:9093",
        "client_config": {
            "security_protocol": "SSL",
            "ssl_cafile": "/srv/pki/trusted.pem",
            "ssl_check_hostname": True,
            "ssl_certfile": "/srv/pki/admin.crt",
            "ssl_keyfile": "/srv/pki/admin.key",
            "request_timeout_ms": 60000,
            "api_version_auto_timeout_ms": 5000,
        },
    }


@pytest.mark.parametrize(
    ("key", "owner"),
    [
        ("ssl_check_hostname", "the roles (hostname verification stays on)"),
        ("security_protocol", "kafka_adminclient_listener's protocol in kafka_listeners"),
        ("ssl_cafile", "kafka_tls_pki_dir (the CAs the cluster trusts)"),
        ("ssl_context", "kafka_adminclient_listener and kafka_tls_pki_dir (the admin connection's TLS)"),
        ("ssl_ciphers", "kafka_adminclient_listener and kafka_tls_pki_dir (the admin connection's TLS)"),
        ("sasl_mechanism", "the roles (the admin runner authenticates with its certificate, never SASL)"),
        ("bootstrap_servers", "the inventory's brokers on kafka_adminclient_listener"),
    ],
)
def test_extra_admin_settings_that_would_override_a_derived_one_are_refused_naming_the_key(key, owner):
    with pytest.raises(model.ModelError) as refused:
        cluster(admin_client_config={"request_timeout_ms": 60000, key: "x"})
    assert str(refused.value) == f"kafka_adminclient_config sets {key}, which the roles derive from {owner}"


def test_super_users_are_every_node_the_admin_and_the_declared_ones():
    assert cluster()["super_users"] == (
        "User:c1;User:c2;User:c3;User:b1;User:kafka-b2;User:b3;User:b4;User:kafka-admin;User:ops"
    )


def test_the_roles_own_topics_and_acls_are_declared_unless_the_operator_declares_the_topic():
    declared = cluster()["declared"]
    assert [t["name"] for t in declared["topics"]] == ["orders", "smoke", "stretch-probe"]
    assert declared["topics"][2]["configs"] == {"retention.ms": 3600000}
    assert {a["principal"] for a in declared["acls"]} == {"User:kafka-smoke"}
    own = cluster(topics=[{"name": "smoke", "partitions": 8}])["declared"]["topics"]
    assert [(t["name"], t["partitions"]) for t in own] == [("smoke", 8), ("stretch-probe", 12)]


def acls_of(declared, principal):
    """{(resource type, name, pattern): operations} of one principal's declared ACLs."""
    return {
        (a["resource"]["type"], a["resource"]["name"], a["resource"].get("pattern", "literal")): a["operations"]
        for a in declared["acls"]
        if a["principal"] == principal
    }


def test_the_canary_reads_and_writes_its_topic_and_uses_its_own_and_spark_batch_reads_groups():
    assert acls_of(cluster()["declared"], "User:kafka-smoke") == {
        ("topic", "smoke", "literal"): ["read", "write", "describe"],
        ("group", "kafka-smoke", "prefixed"): ["read", "describe"],
        # A Spark batch read's group; a streaming query's (spark-kafka-source-) is not the canary's.
        ("group", "spark-kafka-relation-", "prefixed"): ["read", "describe"],
    }


def test_the_streaming_job_reads_its_topics_and_sets_its_groups_timeouts_and_nothing_else():
    declared = cluster(stream_topics=["load", "orders"])["declared"]
    assert acls_of(declared, "User:kafka-stream") == {
        ("topic", "load", "literal"): ["read", "describe"],
        ("topic", "orders", "literal"): ["read", "describe"],
        ("group", "stream-active", "literal"): ["read", "describe", "describe_configs", "alter_configs"],
    }
    # No topics, no job: its user is granted nothing.
    assert acls_of(cluster()["declared"], "User:kafka-stream") == {}


def test_plaintext_listeners_have_no_tls():
    plain = {name: dict(spec, protocol="PLAINTEXT") for name, spec in LISTENERS.items()}
    c = cluster(listeners=plain)
    assert c["tls"] is False
    assert c["clients"]["fra1"] == {
        "bootstrap.servers": "b1:9092,b2:9092,b3:9092,b4:9092",
        "client.rack": "fra1",
        "security.protocol": "PLAINTEXT",
    }


@pytest.mark.parametrize(
    ("setting", "variable"),
    [
        ("client_listener", "kafka_client_listener"),
        ("admin_listener", "kafka_adminclient_listener"),
        ("inter_broker_listener", "kafka_inter_broker_listener"),
        ("controller_listener", "kafka_controller_listener"),
    ],
)
def test_a_listener_name_that_is_not_a_listener_is_named_with_its_variable(setting, variable):
    with pytest.raises(model.ModelError, match=f"{variable}='NOPE' is not a key of kafka_listeners"):
        cluster(**{setting: "NOPE"})


def test_a_nodes_dc_reaches_broker_rack_through_the_model():
    """kafka_dc (inventory) -> the model's node record -> broker.rack in server.properties."""
    node = {"log_dirs": ["/data"], "metadata_log_dir": "/meta", "tls": {"keystore": "/k", "truststore": "/t"}}
    props = properties.node_server_properties(cluster(), "b3", node)
    assert props["broker.rack"] == HOSTVARS["b3"]["kafka_dc"]
    assert props["advertised.listeners"] == "REPLICATION://b3:9091,CLIENT://b3:9092"
    assert props["controller.quorum.bootstrap.servers"] == "c1:9093,c2:9093,10.0.3.10:9093"
    assert props["super.users"] == cluster()["super_users"]


def test_tool_properties_are_the_listeners_protocol_and_the_nodes_tls_files():
    server = {"ssl.keystore.location": "/k", "ssl.truststore.type": "PEM", "ssl.principal.mapping.rules": "x"}
    assert properties.tool_properties(server, "SSL") == {
        "security.protocol": "SSL",
        "ssl.keystore.location": "/k",
        "ssl.truststore.type": "PEM",
    }
