"""The alert rules: valid, each tested firing with promtool, and reading only metrics the exporter serves."""

import subprocess

import yaml

from testkit.alert_rules import RULE_TESTS, RULES, alerts, metrics_read, promtool, served
from testkit.prometheus import loaded_alerts, rules_problems


def run_promtool(*args):
    proc = subprocess.run([promtool(), *args], cwd=RULES.parent, capture_output=True, text=True, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


def test_the_rules_are_valid():
    rc, out = run_promtool("check", "rules", RULES.name)
    assert rc == 0, out
    assert f"SUCCESS: {len(alerts())} rules found" in out, out


def test_each_alert_fires_on_its_state_and_only_then():
    rc, out = run_promtool("test", "rules", str(RULE_TESTS))
    assert rc == 0, out


def test_every_alert_is_tested_firing_and_quiet():
    firing, quiet = set(), set()
    for case in yaml.safe_load(RULE_TESTS.read_text())["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alerts()}
    assert names - firing == set(), "alerts never tested firing"
    assert names - quiet == set(), "alerts never tested quiet"


def test_the_rules_read_only_metrics_the_exporters_serve():
    used = metrics_read()
    assert used, "no metric found in the rules"
    assert used - served() == set()
    # The thresholds the role records are read by the rules that compare with them.
    assert {"stretch_wan_rtt_alert_seconds", "stretch_consumer_group_lag_alert_records"} <= used


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
