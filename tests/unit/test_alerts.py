"""The alert rules: valid, each tested firing with promtool, and reading only metrics the exporter serves."""

import re
import subprocess

import yaml

from ansible_collections.stretch.kafka.plugins.module_utils import monitoring
from stretch.alert_rules import REPO, RULE_TESTS, RULES, alerts, metrics_read, promtool
from stretch.cluster_exporter import exporter
from stretch.prometheus import loaded_alerts, rules_problems

EXPORTER = REPO / "roles/kafka_node/templates/etc/kafka/metrics-agent.yaml.j2"
# Series Prometheus itself makes for every target.
SCRAPE_SERIES = {"up"}
# What the blackbox exporter serves: its TLS probe (stretch/prometheus.py's module) and the WAN probe's TCP connect.
PROBE_SERIES = {"probe_success", "probe_ssl_earliest_cert_expiry", "probe_duration_seconds"}
# What Debian's node exporter serves of the filesystems (its filesystem collector, on by default).
NODE_SERIES = {"node_filesystem_avail_bytes", "node_filesystem_size_bytes"}


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


def threshold_names():
    """The series the role's thresholds file records (module_utils/monitoring.py)."""
    rules = monitoring.threshold_rules({("dc1", "dc2"): 0.06}, {"stream-active": 1000})
    return {rule["record"] for group in rules["groups"] for rule in group["rules"]}


def test_the_rules_read_only_metrics_the_exporters_serve():
    used = metrics_read()
    assert used, "no metric found in the rules"
    served = exported_names() | SCRAPE_SERIES | PROBE_SERIES | NODE_SERIES | set(exporter.HELP) | threshold_names()
    assert used - served == set()
    # Each source is read by some rule: a name above that no rule reads any more is stale.
    assert {n for n in used if n.startswith("stretch_")} >= threshold_names()


def rules_reply(*rules, group="stretch"):
    return {"groups": [{"name": group, "file": "stretch-alerts.yml", "rules": list(rules)}]}


def test_the_rules_prometheus_loaded_are_read_by_name_and_health():
    data = rules_reply(
        {"type": "alerting", "name": "KafkaBrokerDown", "health": "ok"},
        {"type": "alerting", "name": "KafkaDcLost", "health": "err", "lastError": "bad expr"},
        {"type": "alerting", "name": "KafkaQuorumLagging", "health": "unknown"},
        {"type": "recording", "name": "job:up:sum", "health": "ok"},
    )
    assert loaded_alerts(data) == {
        "KafkaBrokerDown": "ok",
        "KafkaDcLost": "err: bad expr",
        "KafkaQuorumLagging": "unknown",
    }


def test_a_rule_not_loaded_or_not_evaluated_is_a_problem():
    expected = [rule["alert"] for rule in alerts()]
    assert len(expected) > 3
    every = rules_reply(*({"type": "alerting", "name": n, "health": "ok"} for n in expected))
    assert rules_problems(loaded_alerts(every), expected) == []
    # A rule file Prometheus could not parse leaves no group: nothing is loaded.
    assert (
        rules_problems(loaded_alerts({"groups": []}), expected)[0] == f"alert rule {sorted(expected)[0]} is not loaded"
    )
    first_pending = rules_reply(*({"type": "alerting", "name": n, "health": "unknown"} for n in expected[:1]))
    assert f"alert rule {expected[0]}: unknown" in rules_problems(loaded_alerts(first_pending), expected[:1])
