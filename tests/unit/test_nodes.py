"""The one road from the inventory into Python: node records, with one default each."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.nodes import (
    NodeError,
    bootstrap,
    by_dc,
    listener_record,
    node_records,
    scrape_targets,
    tls_targets,
    with_role,
)

LISTENERS = {
    "CONTROLLER": {"port": 9093, "protocol": "SSL"},
    "REPLICATION": {"port": 9091, "protocol": "SSL"},
    "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
}
GROUPS = {"kafka_controllers": ["c1", "both"], "kafka_brokers": ["b1", "both"], "other": ["x"]}
HOSTVARS = {
    "c1": {"kafka_node_id": 1, "kafka_dc": "fra1", "kafka_advertised_host": "10.0.1.10"},
    "b1": {"kafka_node_id": "101", "kafka_dc": "ams1"},
    "both": {"kafka_node_id": 7},
}


def records():
    return node_records(GROUPS, HOSTVARS, LISTENERS, "CONTROLLER")


def test_every_node_of_the_two_groups_gets_one_record_controllers_first():
    assert [r["host"] for r in records()] == ["c1", "both", "b1"]
    assert records()[0] == {
        "host": "c1",
        "node_id": 1,
        "dc": "fra1",
        "roles": ["controller"],
        "advertised_host": "10.0.1.10",
        "listeners": {
            "CONTROLLER": {
                "name": "CONTROLLER",
                "host": "10.0.1.10",
                "port": 9093,
                "protocol": "SSL",
                "endpoint": "10.0.1.10:9093",
            }
        },
        "principal": "c1",
    }


def test_the_advertised_address_defaults_to_the_inventory_name_and_a_broker_binds_the_other_listeners():
    b1 = next(r for r in records() if r["host"] == "b1")
    assert b1["advertised_host"] == "b1"
    assert {name: listener["endpoint"] for name, listener in b1["listeners"].items()} == {
        "REPLICATION": "b1:9091",
        "CLIENT": "b1:9092",
    }
    assert b1["node_id"] == "101", "the id is passed as written: preflight judges it"


def test_a_missing_dc_is_an_empty_string_for_preflight_to_refuse():
    both = next(r for r in records() if r["host"] == "both")
    assert both["dc"] == ""
    assert both["roles"] == ["broker", "controller"]
    assert set(both["listeners"]) == {"CONTROLLER", "REPLICATION", "CLIENT"}


def test_roles_bootstrap_lists_and_dcs():
    assert [r["host"] for r in with_role(records(), "broker")] == ["both", "b1"]
    assert bootstrap(records(), "CONTROLLER") == "10.0.1.10:9093,both:9093"
    assert bootstrap(with_role(records(), "broker"), "CLIENT") == "both:9092,b1:9092"
    assert by_dc(with_role(records(), "broker")) == {"": [7], "ams1": [101]}


def test_an_unknown_controller_listener_is_named():
    with pytest.raises(NodeError, match="kafka_controller_listener='CTRL' is not a key of kafka_listeners"):
        node_records(GROUPS, HOSTVARS, LISTENERS, "CTRL")


def test_scrape_targets_label_every_node_with_its_name_dc_and_roles():
    records = [
        {"host": "c1", "dc": "dc1", "roles": ["controller"], "advertised_host": "10.0.0.1"},
        {"host": "b1", "dc": "dc2", "roles": ["broker"], "advertised_host": "b1.example"},
        {"host": "x1", "dc": "dc3", "roles": ["broker", "controller"], "advertised_host": "x1"},
    ]
    assert scrape_targets(records, "7071") == [
        {"targets": ["10.0.0.1:7071"], "labels": {"node": "c1", "dc": "dc1", "role": "controller"}},
        {"targets": ["b1.example:7071"], "labels": {"node": "b1", "dc": "dc2", "role": "broker"}},
        {"targets": ["x1:7071"], "labels": {"node": "x1", "dc": "dc3", "role": "broker+controller"}},
    ]


def test_tls_targets_probe_each_node_once_on_a_tls_listener_without_client_certificates_first():
    listeners = {
        "CONTROLLER": {"port": 9093, "protocol": "SSL"},
        "REPLICATION": {"port": 9091, "protocol": "SSL"},
        "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
        "LOCAL": {"port": 9094, "protocol": "PLAINTEXT"},
    }

    def bound(address, *names):
        return {name: listener_record(name, address, listeners[name]) for name in names}

    records = [
        {"host": "c1", "dc": "dc3", "roles": ["controller"], "listeners": bound("10.0.0.1", "CONTROLLER")},
        {"host": "b1", "dc": "dc1", "roles": ["broker"], "listeners": bound("b1", "REPLICATION", "CLIENT", "LOCAL")},
        {"host": "p1", "dc": "dc2", "roles": ["broker"], "listeners": bound("p1", "LOCAL")},
        {"host": "r1", "dc": "dc2", "roles": ["broker"], "listeners": bound("r1", "REPLICATION", "LOCAL")},
    ]
    assert tls_targets(records) == [
        {"targets": ["10.0.0.1:9093"],
         "labels": {"node": "c1", "dc": "dc3", "role": "controller", "kafka_listener": "CONTROLLER"}},
        {"targets": ["b1:9092"], "labels": {"node": "b1", "dc": "dc1", "role": "broker", "kafka_listener": "CLIENT"}},
        {"targets": ["r1:9091"],
         "labels": {"node": "r1", "dc": "dc2", "role": "broker", "kafka_listener": "REPLICATION"}},
    ]  # fmt: skip


@pytest.mark.parametrize("client", [{"protocol": "SASL_SSL"}, {"port": "", "protocol": "SASL_SSL"}, None])
def test_a_listener_without_a_port_is_named_with_the_host_that_binds_it(client):
    listeners = dict(LISTENERS, CLIENT=client)
    with pytest.raises(NodeError, match=r"^both: listener CLIENT has no port: set kafka_listeners\.CLIENT\.port"):
        node_records(GROUPS, HOSTVARS, listeners, "CONTROLLER")
