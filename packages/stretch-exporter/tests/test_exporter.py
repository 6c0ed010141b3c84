"""The cluster's exporter: consumer lag by the owner's DC, the partitions' eligible leader replicas, and a failed
read served as one, never as old figures."""

import importlib
import ipaddress
import json
import subprocess
import threading
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from stretch_exporter.cluster import ReadError
from stretch_exporter.samples import address_dc, exposition, group_samples, replica_samples
from stretch_exporter.service import Exporter, main, serve
from stretch_exporter.settings import SettingsError, librdkafka_config, load_settings
from testkit.alert_rules import promtool

NETWORKS = {"dc1": [ipaddress.ip_network("10.1.0.0/24")], "dc2": [ipaddress.ip_network("10.2.0.0/24")]}


def samples_of(samples, metric):
    return {tuple(sorted(labels.items())): value for name, labels, value in samples if name == metric}


def test_the_settings_are_read_and_bad_ones_named():
    good = load_settings(json.dumps({"bootstrap_servers": "b:9091", "dc_networks": {"dc1": "10.1.0.0/24"}}))
    assert good["dc_networks"] == {"dc1": [ipaddress.ip_network("10.1.0.0/24")]}
    assert good["interval_seconds"] == 10.0
    for text, message in [
        ("{", "the settings are not JSON"),
        ("{}", "the settings need bootstrap_servers"),
        ('{"bootstrap_servers": "b:1", "dc_networks": {"dc1": "nope"}}', "dc_networks.dc1"),
        ('{"bootstrap_servers": "b:1", "interval_seconds": 0}', "interval_seconds must be a positive number"),
        ('{"bootstrap_servers": "b:1", "timeout_seconds": true}', "timeout_seconds must be a positive number"),
    ]:
        with pytest.raises(SettingsError, match=message):
            load_settings(text)


def test_the_admin_connection_is_given_to_librdkafka_under_its_names():
    config = {
        "security_protocol": "SSL",
        "ssl_cafile": "/p/ca.pem",
        "ssl_certfile": "/p/a.crt",
        "ssl_keyfile": "/p/a.key",
    }
    assert librdkafka_config(config) == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/p/ca.pem",
        "ssl.certificate.location": "/p/a.crt",
        "ssl.key.location": "/p/a.key",
    }
    with pytest.raises(SettingsError, match=r"\['api_version'\]"):
        librdkafka_config({"api_version": (4, 0)})


@pytest.mark.parametrize(
    ("host", "dc"),
    [
        ("/10.1.0.20", "dc1"),
        ("dc2-spark/10.2.0.20", "dc2"),
        ("/10.9.0.1", "unknown"),
        ("", "unknown"),
        ("/x", "unknown"),
    ],
)
def test_a_member_s_dc_is_the_one_whose_network_holds_its_address(host, dc):
    assert address_dc(host, NETWORKS) == dc


def test_each_partition_s_lag_goes_to_its_owner_s_dc_and_every_broker_dc_has_a_total():
    members = [("/10.1.0.20", [("load", 0), ("load", 1)]), ("/10.9.9.9", [("load", 3)])]
    committed = {("load", 0): 90, ("load", 1): 200, ("load", 2): 10, ("load", 3): 5, ("load", 4): -1001}
    ends = {("load", 0): 100, ("load", 1): 150, ("load", 2): 40, ("load", 3): 5, ("load", 4): 7}
    samples = group_samples("g", members, committed, ends, NETWORKS, ["dc1", "dc2"])
    lag = samples_of(samples, "stretch_consumer_group_partition_lag")
    assert lag == {
        (("dc", "dc1"), ("group", "g"), ("partition", "0"), ("topic", "load")): 10,
        # A commit read after the end offset is no negative lag.
        (("dc", "dc1"), ("group", "g"), ("partition", "1"), ("topic", "load")): 0,
        (("dc", "unassigned"), ("group", "g"), ("partition", "2"), ("topic", "load")): 30,
        (("dc", "unknown"), ("group", "g"), ("partition", "3"), ("topic", "load")): 0,
    }
    totals = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_consumer_group_lag").items()}
    assert totals == {"dc1": 10, "dc2": 0, "unassigned": 30, "unknown": 0}
    members_by_dc = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_consumer_group_members").items()}
    assert members_by_dc == {"dc1": 1, "dc2": 0, "unknown": 1}


def test_partitions_under_min_isr_are_counted_by_leader_dc_with_and_without_eligible_leaders():
    brokers = {101: "dc1", 102: "dc1", 201: "dc2", 202: "dc2"}
    partitions = [
        {"topic": "load", "partition": 0, "leader": 101, "isr": [101, 102, 201, 202], "elr": []},
        {"topic": "load", "partition": 1, "leader": 101, "isr": [101], "elr": [201]},
        {"topic": "load", "partition": 2, "leader": 201, "isr": [201], "elr": None},
        {"topic": "load", "partition": 3, "leader": -1, "isr": [], "elr": []},
        {"topic": "smoke", "partition": 0, "leader": 202, "isr": [202, 101], "elr": []},
    ]
    samples = replica_samples(partitions, {"load": 2, "smoke": 2}, brokers, ["dc1", "dc2"])
    under = {
        (dict(k)["topic"], dict(k)["dc"]): v for k, v in samples_of(samples, "stretch_partitions_under_min_isr").items()
    }
    without = {
        (dict(k)["topic"], dict(k)["dc"]): v
        for k, v in samples_of(samples, "stretch_partitions_under_min_isr_without_elr").items()
    }
    assert under == {("load", "dc1"): 1, ("load", "dc2"): 1, ("load", "offline"): 1, ("smoke", "dc1"): 0,
                     ("smoke", "dc2"): 0}  # fmt: skip
    assert without == {("load", "dc1"): 0, ("load", "dc2"): 1, ("load", "offline"): 1, ("smoke", "dc1"): 0,
                       ("smoke", "dc2"): 0}  # fmt: skip
    held = {dict(k)["dc"]: v for k, v in samples_of(samples, "stretch_eligible_leader_replicas").items()}
    assert held == {"dc1": 0, "dc2": 1}


def test_the_exposition_is_what_prometheus_parses():
    samples = group_samples("g\"x", [("/10.1.0.20", [("load", 0)])], {("load", 0): 1}, {("load", 0): 5},
                               NETWORKS, ["dc1", "dc2"])  # fmt: skip
    text = exposition(samples)
    assert 'group="g\\"x"' in text
    proc = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


class StubCluster:
    def __init__(self, fail=()):
        self.fail = set(fail)

    def broker_dcs(self):
        return {101: "dc1", 201: "dc2"}

    def groups(self):
        if "groups" in self.fail:
            raise ReadError("the coordinator did not answer")
        return {"g": {"members": [("/10.2.0.20", [("load", 0)])], "committed": {("load", 0): 3}}}

    def end_offsets(self, partitions):
        return dict.fromkeys(partitions, 8)

    def partitions(self):
        if "partitions" in self.fail:
            raise ReadError("no min.insync.replicas read for topic(s) load")
        return [{"topic": "load", "partition": 0, "leader": 101, "isr": [101, 201], "elr": []}], {"load": 2}


def test_a_failed_read_is_served_as_failed_and_its_figures_left_out():
    exp = Exporter({"dc_networks": NETWORKS, "interval_seconds": 1}, StubCluster(fail=["partitions"]),
                      clock=lambda: 1000.0)  # fmt: skip
    exp.read_once()
    text = exp.metrics()
    assert 'stretch_consumer_group_lag{dc="dc2",group="g"} 5' in text
    assert 'stretch_exporter_read_success{part="groups"} 1' in text
    assert 'stretch_exporter_read_success{part="partitions"} 0' in text
    assert "stretch_partitions_under_min_isr" not in text
    assert exp.errors == {"partitions": "no min.insync.replicas read for topic(s) load"}
    # The next read that fails drops what the last good one had.
    exp.cluster = StubCluster(fail=["groups"])
    exp.read_once()
    assert "stretch_consumer_group_lag{" not in exp.metrics()
    assert 'stretch_partitions_under_min_isr{dc="dc1",topic="load"} 0' in exp.metrics()


def test_before_the_first_read_nothing_passes_for_a_success():
    exp = Exporter({"dc_networks": {}, "interval_seconds": 1}, StubCluster())
    assert 'stretch_exporter_read_success{part="groups"} 0' in exp.metrics()


def test_metrics_are_served_over_http_on_loopback():
    exp = Exporter({"dc_networks": NETWORKS, "interval_seconds": 1}, StubCluster())
    exp.read_once()
    server = serve(exp, "127.0.0.1:0")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            assert 'stretch_consumer_group_members{dc="dc2",group="g"} 1' in reply.read().decode()
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    finally:
        server.shutdown()
        server.server_close()


def test_a_bad_settings_file_stops_it_at_start_naming_the_file_and_the_fault(tmp_path, capsys):
    path = tmp_path / "stretch-exporter.json"
    path.write_text('{"bootstrap_servers": "b:1", "dc_networks": {"dc1": "10.1.0.0/33"}}')
    assert main(["--config", str(path)]) == 2
    assert f"{path}: dc_networks.dc1:" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.json")]) == 2


def test_the_console_script_runs_main():
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    module, name = project["project"]["scripts"]["stretch-exporter"].split(":")
    assert getattr(importlib.import_module(module), name) is main


class FakeKafkaPython:
    """kafka-python's admin client as the exporter's reads use it."""

    def __init__(self, brokers=(), ends=None):
        self.brokers, self.ends = list(brokers), ends or {}

    def describe_cluster(self):
        return {"brokers": self.brokers, "controller_id": 1}

    def list_partition_offsets(self, specs):
        from kafka.structs import OffsetAndTimestamp  # noqa: PLC0415

        return {tp: OffsetAndTimestamp(self.ends[(tp.topic, tp.partition)], -1, 0)
                for tp in specs if (tp.topic, tp.partition) in self.ends}  # fmt: skip


def cluster_on(fake):
    from stretch_exporter.cluster import Cluster  # noqa: PLC0415

    cluster = Cluster.__new__(Cluster)
    cluster._python = fake
    return cluster


def test_the_brokers_dcs_come_from_describe_cluster_fenced_ones_too():
    # A lost DC's brokers stay registered, fenced: its DC keeps its series (0 members) instead of vanishing.
    fake = FakeKafkaPython([{"broker_id": 101, "rack": "dc1", "is_fenced": False},
                            {"broker_id": 201, "rack": "dc2", "is_fenced": True},
                            {"broker_id": 301, "rack": None, "is_fenced": False}])  # fmt: skip
    assert cluster_on(fake).broker_dcs() == {101: "dc1", 201: "dc2", 301: "unknown"}
    with pytest.raises(ReadError, match="named no broker"):
        cluster_on(FakeKafkaPython([])).broker_dcs()


def test_an_end_offset_not_read_fails_the_read_naming_the_partition():
    fake = FakeKafkaPython(ends={("load", 0): 8, ("load", 1): 5})
    assert cluster_on(fake).end_offsets({("load", 0), ("load", 1)}) == {("load", 0): 8, ("load", 1): 5}
    with pytest.raises(ReadError, match="no end offset read for load-2"):
        cluster_on(fake).end_offsets({("load", 0), ("load", 2)})
    assert cluster_on(fake).end_offsets(set()) == {}
