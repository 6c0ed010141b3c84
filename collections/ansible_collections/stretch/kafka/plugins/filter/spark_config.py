"""Filters: Spark's own security settings (module_utils/spark_security.py), composed for the roles."""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import _guard
from ansible_collections.stretch.kafka.plugins.module_utils import spark_security


def spark_properties_file(secret, kind, master="", extra=None, variable="extra settings"):
    """The text of a party's Spark properties file (kind: daemon or application), secret included, then the
    extra settings ({key: value}) of variable, which may not change what the roles derive."""
    problems = spark_security.override_problems(extra or {}, variable)
    if problems:
        raise spark_security.SparkSecurityError("; ".join(problems))
    return spark_security.render({**spark_security.properties(secret, kind, master), **(extra or {})})


def spark_secret_problem(secret):
    """Why secret cannot be a Spark cluster's secret, or '' (never the secret itself)."""
    return spark_security.secret_problem(secret)


def spark_secret_conflicts(hosts, hostvars):
    """Why these Spark hosts' secrets cannot work together: one per DC's cluster, the same on all its hosts."""
    return spark_security.secret_conflicts(
        [
            {
                "host": host,
                "dc": hostvars[host].get("kafka_dc") or "",
                "secret": hostvars[host].get("spark_auth_secret") or "",
            }
            for host in hosts
        ]
    )


class FilterModule:
    def filters(self):
        return {
            "spark_properties_file": _guard(spark_properties_file),
            "spark_secret_problem": _guard(spark_secret_problem),
            "spark_secret_conflicts": _guard(spark_secret_conflicts),
            "spark_override_problems": _guard(spark_security.override_problems),
        }
