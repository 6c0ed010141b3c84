"""Filters that compose node configuration (see module_utils/properties.py)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.stretch.kafka.plugins.module_utils import properties


def _guard(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (ValueError, KeyError) as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    wrapper.__name__ = func.__name__
    return wrapper


def node_records(hosts, hostvars):
    """The nodes named by hosts as {host, node_id, advertised_host, rack}, from the inventory."""
    records = []
    for host in hosts:
        hv = hostvars[host]
        records.append(
            {
                "host": host,
                "node_id": hv.get("kafka_node_id"),
                "advertised_host": hv.get("kafka_advertised_host", host),
                "rack": hv.get("kafka_rack", ""),
            }
        )
    return records


class FilterModule:
    def filters(self):
        return {
            "server_properties": _guard(properties.server_properties),
            "client_properties": _guard(properties.client_properties),
            "listener_endpoints": _guard(properties.listener_endpoints),
            "node_records": node_records,
        }
