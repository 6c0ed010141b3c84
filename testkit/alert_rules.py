"""The roles' alert rules as data: each alert, the metrics its expression reads, and the metrics each exporter
serves (the alert rules and the dashboard may read only those)."""

from __future__ import annotations

import os
import re
import shutil
import sys

import yaml

from testkit import REPO

RULES = REPO / "roles/kafka_monitoring/files/stretch-alerts.yml"
RULE_TESTS = REPO / "tests/unit/alerts/stretch-alerts.test.yml"
JMX_EXPORTER = REPO / "roles/kafka_node/templates/etc/kafka/metrics-agent.yaml.j2"
# Series Prometheus itself makes for every target.
SCRAPE_SERIES = {"up"}
# What the blackbox exporter serves: its TLS probe (testkit/prometheus.py's module) and the WAN probe's TCP connect.
PROBE_SERIES = {"probe_success", "probe_ssl_earliest_cert_expiry", "probe_duration_seconds"}
# What Debian's node exporter serves of the filesystems and the memory (collectors on by default).
NODE_SERIES = {
    "node_filesystem_avail_bytes",
    "node_filesystem_size_bytes",
    "node_memory_MemAvailable_bytes",
    "node_memory_MemTotal_bytes",
}


def alerts():
    """Every alerting rule ({alert, expr, for, labels, annotations})."""
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"] if "alert" in rule]


def metric_names(expr):
    """The metric names a PromQL expression reads (the JMX exporter's kafka_*, the blackbox exporter's probe_*,
    the node exporter's node_*, the cluster's exporter's and the thresholds' stretch_*, and Prometheus's own up)."""
    # Label names and values are no metrics: drop the strings, the selectors' braces and the by/on clauses' lists.
    expr = re.sub(r'"[^"]*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return set(re.findall(r"\b((?:kafka|probe|node|stretch)_[A-Za-z0-9_]+|up)\b", expr))


def metrics_read():
    """The metric names the alerts' expressions read."""
    return set().union(*(metric_names(rule["expr"]) for rule in alerts()))


def jmx_exported_names():
    """The metric names the JMX exporter's rules give (a $1 taken from the pattern's alternatives)."""
    names = set()
    for rule in yaml.safe_load(JMX_EXPORTER.read_text())["rules"]:
        name = rule["name"]
        if "$1" in name:
            choices = re.search(r"\(([^()]*\|[^()]*)\)", rule["pattern"]).group(1).split("|")
            names |= {name.replace("$1", choice).lower() for choice in choices}
        else:
            names.add(name)
    return names


def served():
    """Every metric name some exporter of the cluster serves, or the role's thresholds file records."""
    from ansible_collections.stretch.kafka.plugins.module_utils import monitoring  # noqa: PLC0415
    from stretch_exporter.samples import METRICS  # noqa: PLC0415

    thresholds = monitoring.threshold_rules({("dc1", "dc2"): 0.06}, {"stream-active": 1000})
    recorded = {rule["record"] for group in thresholds["groups"] for rule in group["rules"]}
    return jmx_exported_names() | SCRAPE_SERIES | PROBE_SERIES | NODE_SERIES | set(METRICS) | recorded


def promtool():
    """promtool, from the virtualenv (testbed/setup-test-tools.sh unpacks it there) or the PATH."""
    found = shutil.which("promtool", path=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")
    if not found:
        raise RuntimeError("promtool not found: run `make setup-test-tools` (testbed/setup-test-tools.sh)")
    return found
