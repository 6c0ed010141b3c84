"""Filters: what Prometheus is given beside the Kafka nodes' exporters (module_utils/monitoring.py): the hosts'
node exporters, the WAN probes between the DCs, the alert thresholds the inventory declares, and the cluster's
exporter's settings with each DC's networks from the inventory."""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import monitoring


def monitored_hosts(kafka_records, groups, hostvars, group_names):
    """The host records of the Kafka nodes and of the hosts of group_names (module_utils/monitoring.py)."""
    return monitoring.host_records(kafka_records, groups, hostvars, group_names)


def alert_thresholds(cluster, hosts, link, wan_rtt_ms, wan_rtt_factor, lag_alerts, stream_group, stream_topics):
    """The thresholds' rule file (as data): every DC pair's round trip and every declared group's lag."""
    dcs = sorted({h["dc"] for h in hosts})
    broker_dcs = sorted({r["dc"] for r in cluster["brokers"]})
    groups = monitoring.declared_groups(stream_group, stream_topics, cluster["declared"]["acls"])
    wan = monitoring.wan_rtt_thresholds(dcs, broker_dcs, link, wan_rtt_ms or {}, wan_rtt_factor)
    return monitoring.threshold_rules(wan, monitoring.lag_thresholds(lag_alerts or {}, groups))


def exporter_settings(cluster, hosts, networks, interval):
    """The settings file of the cluster's exporter (the stretch-exporter package): the admin connection, each DC's
    networks (checked against the DCs), the read interval."""
    dcs = sorted({h["dc"] for h in hosts})
    return {
        "bootstrap_servers": cluster["admin"]["bootstrap_servers"],
        "client_config": cluster["admin"]["client_config"],
        "dc_networks": monitoring.dc_networks(networks or {}, dcs),
        "interval_seconds": monitoring.positive_number(interval, "kafka_monitoring_exporter_interval"),
    }


class FilterModule:
    def filters(self):
        return {
            "monitored_hosts": _guard(monitored_hosts),
            "node_targets": _guard(monitoring.node_targets),
            "wan_targets": _guard(monitoring.wan_targets),
            "wan_probers": _guard(monitoring.wan_probers),
            "alert_thresholds": _guard(alert_thresholds),
            "exporter_settings": _guard(exporter_settings),
            "inventory_dc_networks": _guard(monitoring.inventory_dc_networks),
        }
