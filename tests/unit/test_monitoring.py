"""What the kafka_monitoring role gives Prometheus beside the JMX exporters: host and WAN probe targets, and the
thresholds from the inventory, each bad one refused with a message that names it."""

import re
import subprocess

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.filter.monitoring_config import alert_thresholds, exporter_settings
from ansible_collections.stretch.kafka.plugins.module_utils import monitoring
from testkit.alert_rules import promtool

KAFKA = [
    {"host": "dc1-controller", "dc": "dc1", "advertised_host": "10.1.0.10", "roles": ["controller"]},
    {"host": "dc2-controller", "dc": "dc2", "advertised_host": "10.2.0.10", "roles": ["controller"]},
    {"host": "dc3-controller", "dc": "dc3", "advertised_host": "10.3.0.10", "roles": ["controller"]},
    {"host": "dc1-broker1", "dc": "dc1", "advertised_host": "10.1.0.11", "roles": ["broker"]},
    {"host": "dc2-broker1", "dc": "dc2", "advertised_host": "10.2.0.11", "roles": ["broker"]},
]
GROUPS = {"spark_masters": ["dc1-spark", "dc2-spark"], "spark_workers": ["dc1-spark", "dc2-spark"]}
HOSTVARS = {"dc1-spark": {"kafka_dc": "dc1", "ansible_host": "10.1.0.20"}, "dc2-spark": {"kafka_dc": "dc2"}}
LINK = {"bandwidth_mbit": 10000, "rtt_ms": 30}


def hosts():
    return monitoring.host_records(KAFKA, GROUPS, HOSTVARS, ["spark_masters", "spark_workers"])


def test_every_kafka_node_and_spark_host_is_a_host_once_with_its_dc_and_role():
    assert [(h["host"], h["dc"], h["address"], h["role"]) for h in hosts()] == [
        ("dc1-controller", "dc1", "10.1.0.10", "controller"),
        ("dc2-controller", "dc2", "10.2.0.10", "controller"),
        ("dc3-controller", "dc3", "10.3.0.10", "controller"),
        ("dc1-broker1", "dc1", "10.1.0.11", "broker"),
        ("dc2-broker1", "dc2", "10.2.0.11", "broker"),
        ("dc1-spark", "dc1", "10.1.0.20", "spark"),
        ("dc2-spark", "dc2", "dc2-spark", "spark"),
    ]


def test_a_host_without_a_dc_is_refused_by_name():
    with pytest.raises(ValueError, match="dc9-spark have no kafka_dc"):
        monitoring.host_records(KAFKA, {"spark_masters": ["dc9-spark"]}, {"dc9-spark": {}}, ["spark_masters"])


def test_node_targets_are_labelled_as_the_jmx_targets_and_as_node_exporters():
    first = monitoring.node_targets(hosts(), 9100)[0]
    assert first == {
        "targets": ["10.1.0.10:9100"],
        "labels": {"node": "dc1-controller", "dc": "dc1", "role": "controller", "exporter": "node"},
    }


def test_each_dc_probes_every_other_dc_from_its_first_host_through_the_probe_s_labels():
    probers = {"dc1": "dc1-controller", "dc2": "dc2-controller", "dc3": "dc3-controller"}
    assert monitoring.wan_probers(hosts()) == probers
    targets = monitoring.wan_targets(hosts(), 9115, 9100)
    pairs = {(t["labels"]["dc"], t["labels"]["peer_dc"]) for t in targets}
    assert pairs == {(a, b) for a in ("dc1", "dc2", "dc3") for b in ("dc1", "dc2", "dc3") if a != b}
    dc1_to_dc2 = next(t for t in targets if (t["labels"]["dc"], t["labels"]["peer_dc"]) == ("dc1", "dc2"))
    assert dc1_to_dc2["targets"] == ["10.1.0.10:9115"]
    assert dc1_to_dc2["labels"]["__param_target"] == "10.2.0.10:9100"
    assert dc1_to_dc2["labels"]["__param_module"] == "stretch_wan"
    assert dc1_to_dc2["labels"]["__metrics_path__"] == "/probe"
    assert dc1_to_dc2["labels"]["exporter"] == "wan"


def test_the_wan_thresholds_come_from_the_declared_round_trips():
    found = monitoring.wan_rtt_thresholds(["dc1", "dc2", "dc3"], ["dc1", "dc2"], LINK, {"dc3": 40}, 2)
    assert found[("dc1", "dc2")] == found[("dc2", "dc1")] == 0.06
    assert found[("dc1", "dc3")] == found[("dc3", "dc2")] == 0.08
    # A DC that declares nothing is taken to have the link's round trip.
    assert monitoring.wan_rtt_thresholds(["dc1", "dc2", "dc3"], ["dc1", "dc2"], LINK, {}, 3)[("dc3", "dc1")] == 0.09


@pytest.mark.parametrize(
    ("declared", "factor", "message"),
    [
        ({"dc4": 40}, 2, "kafka_monitoring_wan_rtt_ms names DC 'dc4', which is no DC of the cluster (dc1, dc2, dc3)"),
        ({"dc1": 40}, 2, "names broker DC(s) dc1: the round trip between the broker DCs is kafka_wan_link.rtt_ms"),
        ({"dc3": 0}, 2, "kafka_monitoring_wan_rtt_ms.dc3 must be a positive number, not 0"),
        ({"dc3": "slow"}, 2, "kafka_monitoring_wan_rtt_ms.dc3 must be a positive number, not 'slow'"),
        ({}, -1, "kafka_monitoring_wan_rtt_alert_factor must be a positive number, not -1"),
        ([40], 2, "kafka_monitoring_wan_rtt_ms must be a mapping of DC to a number, not [40]"),
    ],
)
def test_a_bad_wan_threshold_is_refused_by_name(declared, factor, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        monitoring.wan_rtt_thresholds(["dc1", "dc2", "dc3"], ["dc1", "dc2"], LINK, declared, factor)


def test_the_declared_groups_are_the_streaming_job_s_and_the_literal_acl_groups():
    acls = [
        {"principal": "User:etl", "resource": {"type": "group", "name": "etl-orders"}, "operations": ["read"]},
        {"principal": "User:x", "resource": {"type": "group", "name": "loadtest-", "pattern": "prefixed"}},
        {"principal": "User:x", "resource": {"type": "topic", "name": "orders"}},
    ]
    assert monitoring.declared_groups("stream-active", ["load"], acls) == ["etl-orders", "stream-active"]
    # No topics: no job, so its group is no declared one.
    assert monitoring.declared_groups("stream-active", [], acls) == ["etl-orders"]


@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        ({"orders": 1000}, "names group 'orders', which no declared job uses (the declared groups: stream-active;"),
        ({"stream-active": 0}, "kafka_monitoring_consumer_lag_alerts.stream-active must be a positive number, not 0"),
        ({"stream-active": "lots"}, "kafka_monitoring_consumer_lag_alerts.stream-active must be a positive number"),
        ({"stream-active": True}, "must be a positive number, not True"),
        (["stream-active"], "kafka_monitoring_consumer_lag_alerts must map a group to records"),
    ],
)
def test_a_bad_lag_alert_is_refused_by_name(alerts, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        monitoring.lag_thresholds(alerts, ["stream-active"])


def test_the_dc_networks_are_checked_against_the_dcs():
    assert monitoring.dc_networks({"dc1": "10.1.0.0/24", "dc2": ["10.2.0.0/24", "10.2.1.0/24"]}, ["dc1", "dc2"]) == {
        "dc1": ["10.1.0.0/24"],
        "dc2": ["10.2.0.0/24", "10.2.1.0/24"],
    }
    with pytest.raises(ValueError, match="names DC 'dc9', which is no DC of the cluster"):
        monitoring.dc_networks({"dc9": "10.9.0.0/24"}, ["dc1", "dc2"])
    with pytest.raises(ValueError, match=r"kafka_monitoring_dc_networks.dc1: '10.1.0.0/33' is not a network"):
        monitoring.dc_networks({"dc1": "10.1.0.0/33"}, ["dc1", "dc2"])


def test_two_dcs_whose_networks_overlap_are_refused():
    with pytest.raises(
        ValueError, match=re.escape("the networks of DC 'dc1' (10.0.0.0/8) and DC 'dc2' (10.2.0.0/16) overlap")
    ):
        monitoring.dc_networks({"dc1": "10.0.0.0/8", "dc2": ["10.2.0.0/16"]}, ["dc1", "dc2"])
    # IPv4 and IPv6 networks never overlap; one DC may list a network inside another of its own.
    assert monitoring.dc_networks({"dc1": ["10.1.0.0/16", "fd00:1::/32"], "dc2": "fd00:2::/32"}, ["dc1", "dc2"])
    assert monitoring.dc_networks({"dc1": ["10.0.0.0/8", "10.1.0.0/16"]}, ["dc1"]) == {
        "dc1": ["10.0.0.0/8", "10.1.0.0/16"]
    }


def dc_inventory(**networks):
    """groups and hostvars of two DCs with two hosts each and a tiebreaker, each DC's network(s) as its group vars
    would set them on every host of the DC."""
    dcs = {"dc1": ["dc1-broker1", "dc1-spark"], "dc2": ["dc2-broker1", "dc2-spark"], "dc3": ["dc3-controller"]}
    hostvars = {
        host: {"kafka_dc": dc, **({"kafka_monitoring_dc_network": networks[dc]} if dc in networks else {})}
        for dc, hosts in dcs.items()
        for host in hosts
    }
    return {"all": list(hostvars), **dcs}, hostvars


def test_each_dc_s_networks_come_from_its_hosts_in_the_inventory():
    groups, hostvars = dc_inventory(dc1="10.1.0.0/16", dc2=["10.2.0.0/16", "10.2.1.7/24"])
    hostvars["dc1-spark"]["kafka_monitoring_dc_network"] = "10.11.0.0/16"  # a host's own, beside its DC's
    assert monitoring.inventory_dc_networks(groups, hostvars, ["dc1", "dc2", "dc3"]) == {
        "dc1": ["10.1.0.0/16", "10.11.0.0/16"],
        "dc2": ["10.2.0.0/16", "10.2.1.0/24"],
    }
    assert monitoring.inventory_dc_networks(*dc_inventory(), ["dc1", "dc2", "dc3"]) == {}


BAD_NETWORK = {"kafka_monitoring_dc_network": "10.1.0.0/33"}


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        (
            {"dc1-broker1": BAD_NETWORK, "dc1-spark": BAD_NETWORK},
            "dc1-broker1, dc1-spark: kafka_monitoring_dc_network of DC 'dc1' must be a network (CIDR, such as "
            "10.1.0.0/16) or a list of them, not '10.1.0.0/33'",
        ),
        (
            {"dc2-spark": {"kafka_monitoring_dc_network": ["10.2.0.0/16", "dc2"]}},
            "dc2-spark: kafka_monitoring_dc_network of DC 'dc2' must be a network",
        ),
        (
            {"dc2-spark": {"kafka_dc": "dc9"}},
            "dc2-spark: kafka_monitoring_dc_network is set for DC 'dc9', which is no DC of the cluster (dc1, dc2, dc3)",
        ),
        ({"dc2-spark": {"kafka_dc": ""}}, "dc2-spark: kafka_monitoring_dc_network is set on a host without kafka_dc"),
    ],
)
def test_a_bad_dc_network_in_the_inventory_is_refused_naming_its_hosts(hosts, message):
    groups, hostvars = dc_inventory(dc1="10.1.0.0/16", dc2="10.2.0.0/16")
    for host, changed in hosts.items():
        hostvars[host].update(changed)
    with pytest.raises(ValueError, match=re.escape(message)):
        monitoring.inventory_dc_networks(groups, hostvars, ["dc1", "dc2", "dc3"])


def cluster_model(acls=()):
    return {
        "brokers": [r for r in KAFKA if "broker" in r["roles"]],
        "declared": {"acls": list(acls)},
        "admin": {"bootstrap_servers": "10.1.0.11:9091", "client_config": {"security_protocol": "SSL"}},
    }


def test_a_bad_threshold_fails_the_filter_before_any_file_is_written():
    # The role judges them in its first task, before it writes anything on the Prometheus host.
    with pytest.raises(ValueError, match="names group 'orders'"):
        alert_thresholds(cluster_model(), hosts(), LINK, {}, 2, {"orders": 10}, "stream-active", ["load"])
    with pytest.raises(ValueError, match="names DC 'dc7'"):
        exporter_settings(cluster_model(), hosts(), {"dc7": "10.7.0.0/16"}, 10)
    with pytest.raises(ValueError, match="kafka_monitoring_exporter_interval must be a positive number"):
        exporter_settings(cluster_model(), hosts(), {}, 0)


def test_the_thresholds_file_is_a_valid_rule_file_with_every_pair_and_group(tmp_path):
    rules = alert_thresholds(cluster_model(), hosts(), LINK, {"dc3": 40}, 2, {"stream-active": 1000.0},
                             "stream-active", ["load"])  # fmt: skip
    path = tmp_path / "stretch-thresholds.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    recorded = [(r["record"], r["expr"], r["labels"]) for r in rules["groups"][0]["rules"]]
    assert ("stretch_wan_rtt_alert_seconds", "vector(0.08)", {"dc": "dc3", "peer_dc": "dc1"}) in recorded
    assert ("stretch_consumer_group_lag_alert_records", "vector(1000)", {"group": "stream-active"}) in recorded
    assert len([r for r in recorded if r[0] == "stretch_wan_rtt_alert_seconds"]) == 6
