"""The Grafana dashboard as code: the checked-in JSON is what the SDK makes of testkit/dashboard.py, every query is
valid PromQL reading only metrics the exporters serve, and every panel can be checked for its DCs on the testbed."""

import json
import subprocess

import yaml

from testkit import REPO, dashboard, dashboard_check, dashboard_png
from testkit.alert_rules import metric_names, promtool, served

JSON = REPO / "roles/kafka_monitoring/files/stretch-dashboard.json"


def test_the_checked_in_dashboard_is_the_generated_one():
    assert json.loads(JSON.read_text()) == dashboard.build(), "run `make dashboard` and commit the JSON"
    assert JSON.read_text() == dashboard.render()


def test_the_json_is_one_grafana_imports():
    board = json.loads(JSON.read_text())
    assert board["uid"] == dashboard.UID
    assert board["schemaVersion"] == 41  # Grafana 11.6; Grafana 12 migrates it on import
    assert [v["name"] for v in board["templating"]["list"]] == ["datasource"]
    panels = [p for p in board["panels"] if p["type"] != "row"]
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    assert len(panels) == len(dashboard.panels())
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        assert panel["targets"], panel["title"]
        assert all(t["datasource"]["uid"] == "${datasource}" for t in panel["targets"]), panel["title"]


def test_every_query_is_valid_promql(tmp_path):
    # promtool parses each expression as a recording rule's: a syntax error names it.
    queries = [q for panel in dashboard.panels() for q in panel.queries]
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{i}", "expr": q.promql()} for i, q in enumerate(queries)]}]}  # fmt: skip
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump(rules))
    proc = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_query_reads_only_metrics_the_exporters_serve():
    unknown = {
        (panel.title, name)
        for panel in dashboard.panels()
        for q in panel.queries
        for name in metric_names(q.expr) - served()
    }
    assert unknown == set()


def test_every_panel_has_a_query_whose_dcs_the_drill_checks():
    unchecked = [p.title for p in dashboard.panels() if not any(q.dcs for q in p.queries)]
    assert unchecked == []
    assert {q.dcs for p in dashboard.panels() for q in p.queries} == {dashboard.EVERY, dashboard.BROKERS, None}
    # The picture of a DC loss draws some of them.
    assert len([p for p in dashboard.panels() if p.main]) >= 4


def test_the_panels_cover_what_an_operator_of_a_stretch_cluster_looks_at():
    read = set().union(*(metric_names(q.expr) for p in dashboard.panels() for q in p.queries))
    for wanted in (
        "kafka_raft_current_leader",
        "kafka_raft_current_epoch",
        "kafka_raft_log_end_offset",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_server_isr_shrinks_total",
        "stretch_eligible_leader_replicas",
        "kafka_network_request_time_ms",
        "kafka_server_fetcherstats_bytes_total",
        "kafka_server_followerreplication_byte_rate",
        "stretch_consumer_group_lag",
        "probe_duration_seconds",
        "node_filesystem_avail_bytes",
        "node_memory_MemAvailable_bytes",
    ):
        assert wanted in read, wanted


def test_a_query_without_series_or_without_a_dc_is_a_problem():
    every, brokers = ["dc1", "dc2", "dc3"], ["dc1", "dc2"]
    wan = dashboard.Query("probe_duration_seconds", "{{dc}}", dashboard.EVERY)
    lag = dashboard.Query("sum by (group, dc) (stretch_consumer_group_lag)", "{{dc}}")
    model = dashboard.Query("2 * sum(rate(x[1m]))", "2N", None)
    results = [
        ("WAN", wan, [{"dc": "dc1"}, {"dc": "dc2"}, {"dc": "dc3"}]),
        ("lag", lag, [{"dc": "dc1"}, {"dc": "dc2"}, {"dc": "unassigned"}]),
        ("model", model, [{}]),
    ]
    assert dashboard_check.coverage_problems(results, every, brokers) == []
    results = [("WAN", wan, [{"dc": "dc1"}, {"dc": "dc2"}]), ("lag", lag, []), ("model", model, [])]
    assert dashboard_check.coverage_problems(results, every, brokers) == [
        "WAN: probe_duration_seconds returned no series for dc3",
        "lag: sum by (group, dc) (stretch_consumer_group_lag) returned nothing",
        "model: 2 * sum(rate(x[1m])) returned nothing",
    ]


def test_the_picture_draws_each_main_panel_with_grafana_s_legends(tmp_path):
    assert dashboard_png.legend("{{leader_dc}} -> {{dc}}", {"dc": "dc2", "leader_dc": "dc1"}) == "dc1 -> dc2"
    panel = {"title": "Round trip", "unit": "s", "queries": [
        {"legend": "{{dc}} -> {{peer_dc}}",
         "series": [{"labels": {"dc": "dc1", "peer_dc": "dc2"}, "points": [[100, 0.03], [115, 0.031]]}]}]}  # fmt: skip
    assert dashboard_png.lines(panel, 100) == [("dc1 -> dc2", [0, 15], [30.0, 31.0])]
    data = {"start": 100, "end": 115, "marks": {"dc2 lost": 105}, "panels": [panel, panel, panel]}
    path = dashboard_png.draw(data, tmp_path / "dc-loss.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
