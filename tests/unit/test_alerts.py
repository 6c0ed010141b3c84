"""The alert rules: valid, each tested firing with promtool, and reading only metrics the exporter serves."""

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from stretch.alert_rules import REPO, RULE_TESTS, RULES, alerts, metrics_read

EXPORTER = REPO / "roles/kafka_node/templates/etc/kafka/metrics-agent.yaml.j2"
# Series Prometheus itself makes for every target.
SCRAPE_SERIES = {"up"}
# What the blackbox exporter's TLS probe (tests/prometheus.py's module) serves.
PROBE_SERIES = {"probe_success", "probe_ssl_earliest_cert_expiry"}


def promtool():
    """promtool, from the virtualenv (testbed/setup-host.sh unpacks it there) or the PATH."""
    found = shutil.which("promtool", path=f"{os.path.dirname(sys.executable)}:{os.environ.get('PATH', '')}")
    if not found:
        pytest.fail("promtool not found: run `make setup-python` (testbed/setup-host.sh)")
    return found


def run_promtool(*args):
    proc = subprocess.run([promtool(), *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_rules_are_valid():
    rc, out = run_promtool("check", "rules", RULES.name)
    assert rc == 0, out
    assert f"SUCCESS: {len(alerts())} rules found" in out, out


def test_each_alert_fires_on_its_state_and_only_then():
    rc, out = run_promtool("test", "rules", RULE_TESTS.name)
    assert rc == 0, out


def test_every_alert_is_tested_firing_and_quiet():
    firing, quiet = set(), set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested quiet"


def exported_names():
    """The metric names the exporter's rules give (a $1 taken from the pattern's alternatives)."""
    names = set()
    for rule in yaml.safe_load(EXPORTER.read_text())["rules"]:
        name = rule["name"]
        if "$1" in name:
            choices = re.search(r"\(([^()]*\|[^()]*)\)", rule["pattern"]).group(1).split("|")
            names |= {name.replace("$1", choice).lower() for choice in choices}
        else:
            names.add(name)
    return names


def test_the_rules_read_only_metrics_the_exporter_serves():
    used = metrics_read()
    assert used, "no metric found in the rules"
    assert used - exported_names() - SCRAPE_SERIES - PROBE_SERIES == set()
