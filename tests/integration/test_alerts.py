"""A real Prometheus with the roles' targets and rules: every node scraped with its DC and role, every metric the
rules read served, no alert on the healthy cluster, and a replication throttle left on seen by its alert's expression.
The DC-loss drill checks that the DC's alerts fire and resolve."""

import re
import time

import pytest
from cryptography import x509

from stretch.alert_rules import alerts, metrics_read
from stretch.bench import traffic as traffic_runs
from stretch.cluster import playbook, wait_until
from stretch.prometheus import INTERVAL_SECONDS


def test_prometheus_evaluates_every_alert_rule_of_the_roles_file(prometheus):
    loaded = prometheus.rules()
    assert sorted(loaded) == sorted(rule["alert"] for rule in alerts())
    assert set(loaded.values()) == {"ok"}, loaded


def test_every_node_is_scraped_with_its_dc_and_role(prometheus, cluster):
    labels = {m["node"]: (m["dc"], m["role"]) for m, value in prometheus.query('up{job="kafka"}') if value == 1}
    assert labels == {n.host: (n.dc, "+".join(sorted(n.roles))) for n in cluster.nodes}


def served_certificate_expiry(host):
    """When the certificate in a node's keystore (the one its listeners present) expires, in epoch seconds."""
    pem = host.file("/etc/kafka/tls/keystore.pem").content_string
    block = re.search(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", pem, re.S)
    assert block, "no certificate in the keystore"
    return x509.load_pem_x509_certificate(block.group(0).encode()).not_valid_after_utc.timestamp()


def test_the_tls_probe_reads_each_nodes_certificate_expiry(prometheus, cluster, hosts):
    def probed():
        return {m["node"]: v for m, v in prometheus.query('probe_ssl_earliest_cert_expiry{kafka_listener!=""}')}

    assert wait_until(lambda: set(probed()) == {n.host for n in cluster.nodes}, timeout=60, interval=5), probed()
    assert {m["node"]: v for m, v in prometheus.query('probe_success{kafka_listener!=""}')} == dict.fromkeys(
        (n.host for n in cluster.nodes), 1.0
    )
    # The probe's figure is the certificate on the node, read from its keystore, not from the probe.
    expected = {n.host: served_certificate_expiry(hosts[n.host]) for n in cluster.nodes}
    assert probed() == pytest.approx(expected, abs=1)


# Metrics a broker registers only once they are needed, each checked where it appears.
ON_DEMAND = {
    # Kafka makes the replication quota's sensor when a throttle is first applied:
    # test_a_replication_throttle_left_on_is_seen_and_its_removal_too.
    "kafka_server_followerreplication_byte_rate",
}


def test_every_metric_the_rules_read_is_served(prometheus):
    missing = {}
    for metric in sorted(metrics_read() - ON_DEMAND):
        if not wait_until(lambda m=metric: prometheus.query(f"count({m})"), timeout=30, interval=5):
            missing[metric] = "no series"
    assert missing == {}


def test_the_healthy_cluster_fires_no_alert(prometheus):
    # Every rule evaluated at least twice on scraped data: a rule whose
    # condition holds is pending from its first evaluation on.
    time.sleep(3 * INTERVAL_SECONDS)
    assert prometheus.alerts("firing") == []
    assert prometheus.alerts("pending") == []


def test_a_replication_throttle_left_on_is_seen_and_its_removal_too(prometheus, cluster, tmp_path):
    """The expression of KafkaReplicationThrottleLeftOn (without its 30 minutes) holds on every broker while the
    throttle is on with nothing under-replicated, and on none once it is removed."""
    (rule,) = [r for r in alerts() if r["alert"] == "KafkaReplicationThrottleLeftOn"]
    brokers = {n.host for n in cluster.brokers}

    def seen():
        # Throttled bytes are counted only when replicas fetch some: keep writing.
        traffic_runs.client(None, cluster, tmp_path, "produce", "--records", "500", "--size", "1024")
        return {labels["node"] for labels, _ in prometheus.query(rule["expr"])}

    on = playbook(cluster, "quotas", kafka_admin_replication_throttle="present")
    try:
        assert on.ok, on.log
        assert wait_until(lambda: seen() == brokers, timeout=90, interval=1), f"seen on {seen()}, not {brokers}"
    finally:
        off = playbook(cluster, "quotas")
    assert off.ok, off.log
    assert wait_until(lambda: seen() == set(), timeout=90, interval=1), f"still seen on {seen()}"
