"""Filters that judge the Kafka CLI's quorum and broker reports (see module_utils/health.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.stretch.kafka.plugins.module_utils import health


def quorum_report_problems(text, controllers, max_lag=0):
    """Problems in 'describe --status' + 'describe --replication' output; controllers are node records."""
    try:
        status, replication = health.split_quorum_report(text)
    except ValueError as exc:
        return [str(exc)]
    voter_dcs = {int(c["node_id"]): c["rack"] for c in controllers}
    return health.quorum_problems(status, replication, voter_dcs, int(max_lag))


def endpoint_problems(text, brokers):
    """Problems in 'kafka-cluster list-endpoints' output; brokers are node records."""
    return health.broker_problems(health.parse_endpoints(text), {int(b["node_id"]): b["rack"] for b in brokers})


def cluster_report(quorum_text, endpoints_text, nodes):
    try:
        return health.cluster_report(quorum_text, endpoints_text, nodes)
    except (ValueError, KeyError) as exc:
        raise AnsibleFilterError(f"cluster_report: {exc}") from exc


class FilterModule:
    def filters(self):
        return {
            "quorum_report_problems": quorum_report_problems,
            "endpoint_problems": endpoint_problems,
            "cluster_report": cluster_report,
        }
