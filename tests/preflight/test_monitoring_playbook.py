"""playbooks/monitoring.yml with bad thresholds: refused, naming the variable, before any file is written.

Every host points at a closed port; the role judges the inventory's
thresholds in its first task, which needs no host, and writes on the
Prometheus host (this machine here) only after.
"""

import yaml
from test_preflight_playbook import base_inventory

from stretch.playbook import run as run_playbook


def run_monitoring(tmp_path, **extra):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(base_inventory()))
    target = tmp_path / "prometheus"
    result = run_playbook(path, "monitoring", timeout=120, kafka_monitoring_dir=str(target), **extra)
    return result, target


def refused(tmp_path, message, **extra):
    result, target = run_monitoring(tmp_path, **extra)
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


def test_the_role_writes_every_file_prometheus_and_grafana_read(tmp_path):
    pki = tmp_path / "pki"
    pki.mkdir()
    (pki / "trusted.pem").write_text("the CAs\n")
    result, target = run_monitoring(tmp_path, kafka_tls_pki_dir=str(pki), kafka_stream_topics=["load"],
                                    kafka_monitoring_wan_rtt_ms={"dc3": 40})  # fmt: skip
    assert result.returncode == 0, result.text + result.stderr
    assert sorted(p.name for p in target.iterdir()) == [
        "stretch-alerts.yml", "stretch-ca.pem", "stretch-dashboard.json", "stretch-exporter.json",
        "stretch-exporter.py", "stretch-node-targets.json", "stretch-targets.json", "stretch-thresholds.yml",
        "stretch-tls-targets.json", "stretch-wan-targets.json",
    ]  # fmt: skip
    thresholds = yaml.safe_load((target / "stretch-thresholds.yml").read_text())["groups"][0]["rules"]
    wan = {(r["labels"]["dc"], r["labels"]["peer_dc"]): r["expr"] for r in thresholds if "peer_dc" in r["labels"]}
    assert wan[("dc1", "dc2")] == "vector(0.06)"
    assert wan[("dc3", "dc1")] == "vector(0.08)"
    assert [r["labels"] for r in thresholds if "group" in r["labels"]] == [{"group": "stream-active"}]
    assert (target / "stretch-exporter.json").stat().st_mode & 0o777 == 0o600
    nodes = yaml.safe_load((target / "stretch-node-targets.json").read_text())
    assert len(nodes) == 7
    assert all(t["labels"]["exporter"] == "node" for t in nodes)
    # A second run changes nothing.
    again, _ = run_monitoring(tmp_path, kafka_tls_pki_dir=str(pki), kafka_stream_topics=["load"],
                              kafka_monitoring_wan_rtt_ms={"dc3": 40})  # fmt: skip
    assert again.returncode == 0, again.text
    assert again.changed == 0, again.text
