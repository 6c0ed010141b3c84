"""Cluster-wide dynamic broker configs: declared values against what the cluster enforces.

Kafka keeps a cluster-wide default for every broker's dynamic configs (the
broker resource with an empty name). With Eligible Leader Replicas on, the
controllers apply the cluster-wide min.insync.replicas to every partition, so
the value in server.properties alone is not what the cluster enforces: the
dynamic one is, and a converge reconciles it.
"""

from __future__ import annotations


class SettingsError(ValueError):
    pass


def normalize(declared):
    """{key: value as Kafka stores it} of the declared settings."""
    out = {}
    for key, value in (declared or {}).items():
        if value is None or isinstance(value, (dict, list)):
            raise SettingsError(f"cluster setting {key}: a single value is needed, got {value!r}")
        out[str(key)] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    return out


def plan(declared, current):
    """{"set": {...}, "delete": []}: the declared keys whose cluster-wide value differs. Others are left alone."""
    return {"set": {k: v for k, v in sorted(declared.items()) if current.get(k) != v}, "delete": []}
