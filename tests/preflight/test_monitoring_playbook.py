"""playbooks/monitoring.yml with bad thresholds: refused, naming the variable, before any file is written; with
good ones, every file written and the cluster's exporter installed, once.

Every host points at a closed port; the role judges the inventory's
thresholds in its first task, which needs no host, and writes on the
Prometheus host (this machine here) only after.
"""

import json
import shutil
import subprocess

import pytest
import yaml
from test_preflight_playbook import REPO, base_inventory

from testkit.playbook import run as run_playbook

# The exporter's third-party packages, from the testbed's wheelhouse (testbed/fetch-wheels.sh, run by `make
# setup-testbed`); the exporter itself comes from the wheels bundled in the role (`make wheels`, which `make unit`
# runs through `make collection`).
WHEELS = REPO / "testbed" / "dist" / "wheels"
EXPORTER_WHEELS = ("confluent_kafka-", "kafka_python-", "prometheus_client-")
BUNDLED = REPO / "roles" / "python_venv" / "files" / "wheels"


def run_monitoring(tmp_path, inventory=None, **extra):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory or base_inventory()))
    target = tmp_path / "prometheus"
    result = run_playbook(path, "monitoring", timeout=120, kafka_monitoring_dir=str(target), **extra)
    return result, target


def refused(tmp_path, message, inventory=None, **extra):
    result, target = run_monitoring(tmp_path, inventory, **extra)
    out = result.text + result.stderr
    assert result.returncode != 0, out
    assert message in out, out
    assert not target.exists(), "a file was written before the thresholds were judged"
    assert not [h for h, s in result.recap.items() if s.get("unreachable")], "a host was contacted"


def test_a_lag_alert_for_a_group_no_declared_job_uses_is_refused(tmp_path):
    refused(tmp_path, "kafka_monitoring_consumer_lag_alerts names group 'orders', which no declared job uses",
            kafka_monitoring_consumer_lag_alerts={"orders": 1000})  # fmt: skip


def test_a_lag_threshold_that_is_not_a_positive_number_is_refused(tmp_path):
    refused(tmp_path, "kafka_monitoring_consumer_lag_alerts.stream-active must be a positive number, not -5",
            kafka_stream_topics=["load"], kafka_monitoring_consumer_lag_alerts={"stream-active": -5})  # fmt: skip


def test_a_round_trip_for_a_dc_the_cluster_does_not_have_is_refused(tmp_path):
    refused(tmp_path, "kafka_monitoring_wan_rtt_ms names DC 'dc9', which is no DC of the cluster (dc1, dc2, dc3)",
            kafka_monitoring_wan_rtt_ms={"dc9": 40})  # fmt: skip


def test_a_network_for_a_dc_the_cluster_does_not_have_is_refused(tmp_path):
    refused(
        tmp_path, "kafka_monitoring_dc_networks names DC 'dc9'", kafka_monitoring_dc_networks={"dc9": "10.9.0.0/16"}
    )


def with_dc_networks(inventory, **networks):
    """The inventory with each named DC's kafka_monitoring_dc_network in its group vars."""
    for dc, network in networks.items():
        inventory["all"]["children"][dc]["vars"]["kafka_monitoring_dc_network"] = network
    return inventory


def test_a_dc_network_that_is_not_a_network_is_refused_naming_the_dc_s_hosts(tmp_path):
    inventory = with_dc_networks(base_inventory(), dc1="10.1.0.0/16", dc2="10.2.0.0/33")
    refused(tmp_path, "dc2-broker0, dc2-broker1, dc2-controller0: kafka_monitoring_dc_network of DC 'dc2' must be a "
            "network (CIDR, such as 10.1.0.0/16) or a list of them, not '10.2.0.0/33'", inventory)  # fmt: skip


def test_a_dc_network_for_a_dc_that_is_not_the_cluster_s_is_refused_naming_its_host(tmp_path):
    inventory = with_dc_networks(base_inventory(), dc1="10.1.0.0/16")
    inventory["all"]["children"]["dc9"] = {
        "hosts": {"dc9-app": None},
        "vars": {"kafka_dc": "dc9", "kafka_monitoring_dc_network": "10.9.0.0/16"},
    }
    refused(tmp_path, "dc9-app: kafka_monitoring_dc_network is set for DC 'dc9', which is no DC of the cluster "
            "(dc1, dc2, dc3)", inventory)  # fmt: skip


@pytest.fixture
def wheel_dir(tmp_path):
    """A wheelhouse of the exporter's third-party packages, copied from the testbed's."""
    if not any(BUNDLED.glob("stretch_exporter-*.whl")):
        pytest.fail(f"no wheel of stretch_exporter in {BUNDLED}: run `make wheels`")
    found = {prefix: sorted(WHEELS.glob(f"{prefix}*.whl")) for prefix in EXPORTER_WHEELS}
    missing = [prefix.rstrip("-") for prefix, wheels in found.items() if not wheels]
    if missing:
        pytest.fail(f"no wheel of {', '.join(missing)} in {WHEELS}: run testbed/fetch-wheels.sh")
    out = tmp_path / "wheels"
    out.mkdir()
    for wheel in sum(found.values(), []):
        shutil.copy(wheel, out)
    return out


def test_the_role_writes_every_file_and_installs_the_exporter_once(tmp_path, wheel_dir):
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "trusted.pem").write_text("the CAs\n")
    home = tmp_path / "exporter"
    inventory = with_dc_networks(base_inventory(), dc1="10.1.0.0/16", dc2=["10.2.0.0/16", "10.12.0.0/16"])
    settings = {
        "kafka_tls_pki_dir": str(pki),
        "kafka_stream_topics": ["load"],
        "kafka_monitoring_wan_rtt_ms": {"dc3": 40},
        "kafka_monitoring_exporter_home": str(home),
        "kafka_monitoring_wheel_dir": str(wheel_dir),
    }
    result, target = run_monitoring(tmp_path, inventory, **settings)
    assert result.returncode == 0, result.text + result.stderr
    assert sorted(p.name for p in target.iterdir()) == [
        "stretch-alerts.yml", "stretch-ca.pem", "stretch-dashboard.json", "stretch-exporter.json",
        "stretch-node-targets.json", "stretch-targets.json", "stretch-thresholds.yml",
        "stretch-tls-targets.json", "stretch-wan-targets.json",
    ]  # fmt: skip
    thresholds = yaml.safe_load((target / "stretch-thresholds.yml").read_text())["groups"][0]["rules"]
    wan = {(r["labels"]["dc"], r["labels"]["peer_dc"]): r["expr"] for r in thresholds if "peer_dc" in r["labels"]}
    assert wan[("dc1", "dc2")] == "vector(0.06)"
    assert wan[("dc3", "dc1")] == "vector(0.08)"
    assert [r["labels"] for r in thresholds if "group" in r["labels"]] == [{"group": "stream-active"}]
    assert (target / "stretch-exporter.json").stat().st_mode & 0o777 == 0o600
    # Each DC's networks, from its group vars.
    assert json.loads((target / "stretch-exporter.json").read_text())["dc_networks"] == {
        "dc1": ["10.1.0.0/16"],
        "dc2": ["10.2.0.0/16", "10.12.0.0/16"],
    }
    nodes = yaml.safe_load((target / "stretch-node-targets.json").read_text())
    assert len(nodes) == 7
    assert all(t["labels"]["exporter"] == "node" for t in nodes)
    # The exporter's entry point, in its own virtualenv, with its dependencies beside it.
    venv = home / "venv" / "bin"
    ran = subprocess.run([venv / "stretch-exporter", "--help"], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    assert "--config" in ran.stdout, ran.stdout
    imports = "import confluent_kafka, kafka.admin, prometheus_client"
    ran = subprocess.run([venv / "python", "-c", imports], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, ran.stderr
    # A second run changes nothing.
    again, _ = run_monitoring(tmp_path, inventory, **settings)
    assert again.returncode == 0, again.text
    assert again.changed == 0, again.text
