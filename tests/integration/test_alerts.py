"""A real Prometheus with the roles' targets and rules: every node scraped with its DC and role, every metric the
rules read served, no alert on the healthy cluster, and a replication throttle left on seen by its alert's expression.
The DC-loss drill checks that the DC's alerts fire and resolve."""

import re
import time

import pytest
from cryptography import x509

from testkit.alert_rules import alerts, metrics_read
from testkit.bench import traffic as traffic_runs
from testkit.cluster import playbook, uncommitted_group, wait_until
from testkit.prometheus import INTERVAL_SECONDS


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


def test_every_metric_the_rules_read_is_served(prometheus, a_group):
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


def test_every_host_s_node_exporter_is_scraped_with_its_dc(prometheus, cluster):
    """Every Kafka node and every Spark host (roles/node_exporter), each with the DC of the inventory."""
    expected = {n.address: n.dc for n in cluster.nodes} | {s["host"]: dc for dc, s in (cluster.spark or {}).items()}

    def scraped():
        return {m["instance"].rsplit(":", 1)[0]: m["dc"] for m, v in prometheus.query('up{exporter="node"}') if v == 1}

    assert wait_until(lambda: scraped() == expected, timeout=60, interval=5), scraped()
    # Each reports a filesystem and its memory, which the host panels and alerts read.
    for metric in ("node_filesystem_avail_bytes", "node_memory_MemAvailable_bytes"):
        hosts = {m["instance"].rsplit(":", 1)[0] for m, _ in prometheus.query(f'{metric}{{exporter="node"}}')}
        assert hosts == set(expected), metric


def test_the_wan_probe_measures_each_dc_pair_s_round_trip_under_its_threshold(prometheus, cluster):
    """The blackbox exporter of each DC's first host times a connect to each other DC's: a round trip of the
    testbed's WAN, within 20% below the round trip the inventory declares (the threshold over its factor) and
    under the threshold itself."""
    dcs = sorted({n.dc for n in cluster.nodes})
    pairs = {(a, b) for a in dcs for b in dcs if a != b}

    def measured():
        found = prometheus.query('min_over_time(probe_duration_seconds{exporter="wan"}[1m])')
        ok = {(m["dc"], m["peer_dc"]) for m, v in prometheus.query('probe_success{exporter="wan"}') if v == 1}
        return {(m["dc"], m["peer_dc"]): v for m, v in found if (m["dc"], m["peer_dc"]) in ok}

    assert wait_until(lambda: set(measured()) == pairs, timeout=90, interval=5), measured()
    thresholds = {(m["dc"], m["peer_dc"]): v for m, v in prometheus.query("stretch_wan_rtt_alert_seconds")}
    assert set(thresholds) == pairs
    factor = 2  # kafka_monitoring_wan_rtt_alert_factor's default
    for pair, seconds in measured().items():
        assert 0.8 * thresholds[pair] / factor <= seconds < thresholds[pair], (pair, seconds, thresholds[pair])


def test_the_cluster_exporter_reads_lag_per_dc_and_the_partitions_eligible_leaders(prometheus, cluster, a_group):
    def read():
        return {m["part"]: v for m, v in prometheus.query("stretch_exporter_read_success")}

    assert wait_until(lambda: read() == {"groups": 1.0, "partitions": 1.0}, timeout=60, interval=5), read()

    # Every broker DC has a lag total for every group (0 when its members own nothing).
    def groups():
        found = {}
        for m, _ in prometheus.query("stretch_consumer_group_lag"):
            found.setdefault(m["group"], set()).add(m["dc"])
        return found

    assert wait_until(lambda: a_group in groups(), timeout=60, interval=5), f"{a_group} not read: {groups()}"
    by_group = groups()
    assert all(set(cluster.dcs) <= dcs for dcs in by_group.values()), by_group
    # A whole cluster: no partition under min ISR, every broker DC reported.
    without = prometheus.query("sum by (dc) (stretch_partitions_under_min_isr_without_elr)")
    assert {m["dc"]: v for m, v in without} == dict.fromkeys(cluster.dcs, 0.0)


def test_a_group_with_a_backlog_and_no_commit_is_seen_by_its_alert(prometheus, cluster):
    """A member that owns a partition of 50 records and never commits: the exporter counts the partition as
    uncommitted and its lag from the log start (50, where it read 0 before), and the expression of
    KafkaConsumerGroupNeverCommitted (without its 15 minutes) holds for the group."""
    (rule,) = [r for r in alerts() if r["alert"] == "KafkaConsumerGroupNeverCommitted"]
    with uncommitted_group(cluster, records=50) as (group, topic):

        def seen():
            return {m["dc"]: v for m, v in prometheus.query(rule["expr"]) if m["group"] == group}

        assert wait_until(seen, timeout=90, interval=5), f"{group} not seen by {rule['alert']}"
        assert sum(seen().values()) == 1, seen()
        lag = prometheus.query(f'stretch_consumer_group_partition_lag{{group="{group}",topic="{topic}"}}')
        assert [v for _, v in lag] == [50.0], lag
    # The member gone and the group deleted, the expression no longer holds for it.
    assert wait_until(lambda: not seen(), timeout=90, interval=5), seen()
