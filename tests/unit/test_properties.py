"""server.properties composition: stretch defaults, listeners by role, overrides."""

import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import FilterModule
from ansible_collections.stretch.kafka.plugins.module_utils.nodes import bootstrap, node_records
from ansible_collections.stretch.kafka.plugins.module_utils.properties import server_properties

LISTENERS = {
    "CONTROLLER": {"port": 9093, "protocol": "SSL"},
    "REPLICATION": {"port": 9091, "protocol": "SSL"},
    "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
}
TLS = {"keystore": "/etc/kafka/tls/keystore.pem", "truststore": "/etc/kafka/tls/trusted.pem"}
# The inventory as Ansible would hold it; every record comes through node_records.
GROUPS = {"kafka_controllers": ["c1", "c2", "c3"], "kafka_brokers": ["b1"]}
HOSTVARS = {
    "c1": {"kafka_node_id": 1, "kafka_dc": "dc1", "kafka_advertised_host": "c1.dc1"},
    "c2": {"kafka_node_id": 2, "kafka_dc": "dc2", "kafka_advertised_host": "c2.dc2"},
    "c3": {"kafka_node_id": 3, "kafka_dc": "dc3", "kafka_advertised_host": "c3.dc3"},
    "b1": {"kafka_node_id": 101, "kafka_dc": "dc1", "kafka_advertised_host": "b1.dc1"},
}


def records(groups=GROUPS, listeners=None):
    return node_records(groups, HOSTVARS, listeners or LISTENERS, "CONTROLLER")


CONTROLLERS = records()[:3]
FILTERS = FilterModule().filters()


def cluster(**overrides):
    base = {
        "listeners": LISTENERS,
        "controller_listener": "CONTROLLER",
        "inter_broker_listener": "REPLICATION",
        "controllers": CONTROLLERS,
        "replication_factor": 4,
        "min_insync_replicas": 2,
        "properties": {},
        "broker_properties": {},
        "controller_properties": {},
        "tls": TLS,
        "sasl_mechanism": "SCRAM-SHA-512",
        "authorizer": {"super_users": "User:c1;User:kafka-admin"},
    }
    base.update(overrides)
    return base


def node(*roles, host="b1", listeners=None):
    """The record of host as if it were in the groups of roles, with the node role's paths."""
    groups = {
        "kafka_controllers": ["c1", "c2", "c3"] + ([host] if "controller" in roles and host != "c3" else []),
        "kafka_brokers": [host] if "broker" in roles else [],
    }
    record = next(r for r in records(groups, listeners) if r["host"] == host)
    return dict(record, log_dirs=["/data/a", "/data/b"], metadata_log_dir="/meta")


def test_broker_gets_rack_selector_and_stretch_defaults():
    props = server_properties(node("broker"), cluster())
    assert props["process.roles"] == "broker"
    assert props["broker.rack"] == "dc1"
    assert props["replica.selector.class"] == "org.apache.kafka.common.replica.RackAwareReplicaSelector"
    for key in (
        "default.replication.factor",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
    ):
        assert props[key] == "4"
    assert props["min.insync.replicas"] == "2"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["unclean.leader.election.enable"] == "false"
    assert props["log.dirs"] == "/data/a,/data/b"
    assert props["metadata.log.dir"] == "/meta"


def test_broker_binds_and_advertises_only_broker_listeners():
    props = server_properties(node("broker"), cluster())
    assert props["listeners"] == "REPLICATION://0.0.0.0:9091,CLIENT://0.0.0.0:9092"
    assert props["advertised.listeners"] == "REPLICATION://b1.dc1:9091,CLIENT://b1.dc1:9092"
    assert props["inter.broker.listener.name"] == "REPLICATION"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["listener.security.protocol.map"] == "CONTROLLER:SSL,REPLICATION:SSL,CLIENT:SASL_SSL"
    assert props["controller.quorum.bootstrap.servers"] == "c1.dc1:9093,c2.dc2:9093,c3.dc3:9093"
    assert "controller.quorum.voters" not in props


def test_controller_has_no_broker_settings():
    props = server_properties(node("controller", host="c3"), cluster())
    assert props["process.roles"] == "controller"
    assert props["listeners"] == "CONTROLLER://0.0.0.0:9093"
    assert props["advertised.listeners"] == "CONTROLLER://c3.dc3:9093"
    assert props["log.dirs"] == "/meta"
    assert props["min.insync.replicas"] == "2"
    for key in ("broker.rack", "replica.selector.class", "inter.broker.listener.name", "default.replication.factor"):
        assert key not in props


def test_combined_mode_binds_every_listener():
    props = server_properties(node("controller", "broker"), cluster())
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"].split(",")[0] == "CONTROLLER://0.0.0.0:9093"
    assert props["log.dirs"] == "/data/a,/data/b"


def test_overrides_apply_last_by_role():
    c = cluster(
        properties={"num.io.threads": 16, "min.insync.replicas": 3},
        broker_properties={"num.io.threads": 32},
        controller_properties={"num.io.threads": 4},
    )
    assert server_properties(node("broker"), c)["num.io.threads"] == "32"
    assert server_properties(node("controller"), c)["num.io.threads"] == "4"
    assert server_properties(node("broker"), c)["min.insync.replicas"] == "3"


def test_listener_properties_are_scoped_to_the_listener_and_win_over_derived_security():
    assert server_properties(node("broker"), cluster())["listener.name.client.ssl.client.auth"] == "none"
    listeners = dict(LISTENERS, CLIENT=dict(LISTENERS["CLIENT"], properties={"ssl.client.auth": "required"}))
    props = server_properties(node("broker", listeners=listeners), cluster(listeners=listeners))
    assert props["listener.name.client.ssl.client.auth"] == "required"


def test_every_node_carries_the_security_of_every_listener():
    """A controller is the brokers' TLS server and a broker the controller listener's client."""
    for props in (
        server_properties(node("broker"), cluster()),
        server_properties(node("controller", host="c3"), cluster()),
    ):
        assert props["ssl.keystore.type"] == "PEM"
        assert props["ssl.keystore.location"] == TLS["keystore"]
        assert props["ssl.endpoint.identification.algorithm"] == "https"
        assert props["listener.name.controller.ssl.client.auth"] == "required"
        assert props["listener.name.replication.ssl.client.auth"] == "required"
        assert props["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
        assert props["allow.everyone.if.no.acl.found"] == "false"
        assert props["super.users"] == "User:c1;User:kafka-admin"


def test_unknown_controller_listener_is_named():
    with pytest.raises(ValueError, match="kafka_controller_listener='CTRL' is not a key of kafka_listeners"):
        server_properties(node("broker"), cluster(controller_listener="CTRL"))


def test_inter_broker_listener_must_be_a_broker_listener():
    with pytest.raises(ValueError, match="kafka_inter_broker_listener='CONTROLLER'"):
        server_properties(node("broker"), cluster(inter_broker_listener="CONTROLLER"))


def test_bootstrap_lists():
    assert bootstrap(CONTROLLERS[:2], "CONTROLLER") == "c1.dc1:9093,c2.dc2:9093"
    assert bootstrap(records(), "CLIENT") == "b1.dc1:9092", "controllers do not bind the client listener"


def test_every_node_gets_the_wan_defaults_of_its_roles():
    broker = server_properties(node("broker"), cluster())
    controller = server_properties(node("controller", host="c3"), cluster())
    for props in (broker, controller):
        assert props["socket.send.buffer.bytes"] == "-1"
        assert props["socket.receive.buffer.bytes"] == "-1"
    assert broker["replica.socket.receive.buffer.bytes"] == "-1"
    assert broker["replica.fetch.wait.max.ms"] == "100"
    assert broker["replica.fetch.backoff.ms"] == "100"
    assert broker["broker.heartbeat.interval.ms"] == "1000"
    assert "broker.session.timeout.ms" not in broker
    assert controller["broker.session.timeout.ms"] == "6000"
    assert "replica.fetch.wait.max.ms" not in controller
    assert "replica.fetch.backoff.ms" not in controller


def test_the_operator_overrides_a_wan_default():
    c = cluster(broker_properties={"replica.fetch.wait.max.ms": 500}, properties={"socket.send.buffer.bytes": 1048576})
    props = server_properties(node("broker"), c)
    assert props["replica.fetch.wait.max.ms"] == "500"
    assert props["socket.send.buffer.bytes"] == "1048576"


# -- the file as Kafka reads it ---------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "roles/kafka_node/templates/etc/kafka"
# java.util.Properties.load(InputStream), as Kafka's Utils.loadProps reads server.properties (ISO 8859-1),
# printing each key and value as the hex of its UTF-16 code units.
READER = """
import java.io.*;
import java.util.*;

public class Read {
    static String hex(String s) {
        StringBuilder out = new StringBuilder();
        for (char c : s.toCharArray()) out.append(String.format("%04x", (int) c));
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) { props.load(in); }
        for (String key : props.stringPropertyNames()) System.out.println(hex(key) + " " + hex(props.getProperty(key)));
    }
}
"""


def java_loads(text, tmp_path):
    """{key: value} of text written as UTF-8 (as Ansible writes a file) and read back by Java's Properties.load."""
    java = shutil.which("java")
    if not java:
        pytest.fail("java not found: run `make setup-python` (testbed/setup-host.sh installs the JDK)")
    (tmp_path / "Read.java").write_text(READER)
    (tmp_path / "server.properties").write_bytes(text.encode("utf-8"))
    proc = subprocess.run(
        [java, str(tmp_path / "Read.java"), str(tmp_path / "server.properties")],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found = {}
    for line in proc.stdout.splitlines():
        key, _, value = line.partition(" ")
        found[bytes.fromhex(key).decode("utf-16-be")] = bytes.fromhex(value).decode("utf-16-be")
    return found


def render_template(name, **variables):
    """A kafka_node template rendered as Ansible renders it (trim_blocks), with the collection's filter."""
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters["stretch.kafka.java_properties"] = FILTERS["java_properties"]
    return env.from_string((TEMPLATES / name).read_text()).render(**variables)


def server_file(props, dc="dc1"):
    this = {"node_id": 101, "roles": ["broker"], "dc": dc}
    return render_template("server.properties.j2", kafka_node_server_config=props, kafka_this_node=this)


def test_a_value_holding_a_line_break_cannot_add_a_setting_of_its_own(tmp_path):
    smuggled = "8\nallow.everyone.if.no.acl.found=true\nsuper.users=User:mallory"
    props = server_properties(node("broker"), cluster(broker_properties={"num.io.threads": smuggled}))
    read = java_loads(server_file(props), tmp_path)
    assert read["num.io.threads"] == smuggled
    assert read["allow.everyone.if.no.acl.found"] == "false"
    assert read["super.users"] == "User:c1;User:kafka-admin"
    assert read == props


def test_keys_and_values_read_back_as_written_whatever_they_hold(tmp_path):
    settings = {
        "backslash": "C:\\kafka\\data\\",
        "lines": "one\ntwo\r\nthree\tfour\ffive",
        "leading": "  two spaces first",
        "separators": "a=b:c d#e!f",
        "latin": "zürich",
        "beyond.latin": "kraków € 東京 🚀",
        "odd key=with:all #the! syntax": "v",
        "#comment-like": "kept",
        "!bang": "kept",
        "empty": "",
        "trailing.backslash": "\\",
        "controls": "\x00\x07\x1b\x7f\x85",
    }
    text = FILTERS["java_properties"](settings, ["a comment\nwith a line break", "ü"])
    assert all(line.isascii() for line in text.splitlines() if not line.startswith("#"))
    assert java_loads(text, tmp_path) == settings


def test_printable_values_come_out_as_they_are_so_running_nodes_see_no_change():
    props = server_properties(node("broker"), cluster())
    text = server_file(props)
    assert text.splitlines()[:2] == [
        "# Managed by Ansible (role kafka_node): local changes are overwritten.",
        "# Node 101 (broker) in DC dc1.",
    ]
    body = [line for line in text.splitlines() if not line.startswith("#")]
    assert body == [f"{k}={v}" for k, v in sorted(props.items(), key=lambda kv: kv[0].lower())]


def test_a_comment_holding_a_line_break_stays_a_comment(tmp_path):
    text = server_file(server_properties(node("broker"), cluster()), dc="dc1\nallow.everyone.if.no.acl.found=true")
    assert "# allow.everyone.if.no.acl.found=true" in text
    assert java_loads(text, tmp_path)["allow.everyone.if.no.acl.found"] == "false"


def test_the_tools_file_writes_its_comment_and_settings_through_the_same_writer():
    text = render_template(
        "tool.properties.j2",
        kafka_node_tool_file_properties={"security.protocol": "SSL", "ssl.keystore.location": "/etc/kafka/tls/k.pem"},
        kafka_node_tool_file_header="How the tools connect\n  kafka-configs --bootstrap-server HOST:PORT",
    )
    assert text == (
        "# Managed by Ansible (role kafka_node): local changes are overwritten.\n"
        "# How the tools connect\n"
        "#   kafka-configs --bootstrap-server HOST:PORT\n"
        "security.protocol=SSL\n"
        "ssl.keystore.location=/etc/kafka/tls/k.pem\n"
    )
