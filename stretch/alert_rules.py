"""The roles' alert rules as data: each alert, and the metrics its expression reads."""

from __future__ import annotations

import os
import re
import shutil
import sys

import yaml

from stretch import REPO

RULES = REPO / "roles/kafka_monitoring/files/stretch-alerts.yml"
RULE_TESTS = REPO / "roles/kafka_monitoring/files/stretch-alerts.test.yml"


def alerts():
    """Every alerting rule ({alert, expr, for, labels, annotations})."""
    return [rule for group in yaml.safe_load(RULES.read_text())["groups"] for rule in group["rules"] if "alert" in rule]


def metrics_read():
    """The metric names the alerts' expressions read (the JMX exporter's kafka_*, the blackbox exporter's probe_*,
    the node exporter's node_*, the cluster's exporter's and the thresholds' stretch_*, and Prometheus's own up)."""
    used = set()
    for rule in alerts():
        # Label names are no metrics: drop the selectors' braces and the by/on clauses' lists.
        expr = re.sub(r"\{[^}]*\}", "", rule["expr"])
        expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
        used |= set(re.findall(r"\b((?:kafka|probe|node|stretch)_[a-z0-9_]+|up)\b", expr))
    return used


def promtool():
    """promtool, from the virtualenv (testbed/setup-test-tools.sh unpacks it there) or the PATH."""
    found = shutil.which("promtool", path=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")
    if not found:
        raise RuntimeError("promtool not found: run `make setup-test-tools` (testbed/setup-test-tools.sh)")
    return found
