"""The dashboard's panels against the testbed's Prometheus: every query returns series for the DCs it must, over a
drill's window; and the main panels' data kept for the picture (testkit.dashboard_png).

The failover drill calls both at its end, over the whole drill: a lost DC's
brokers serve nothing while it is down, so a DC is judged over the window,
not at one instant.
"""

from __future__ import annotations

import json

from testkit import dashboard

STEP_SECONDS = 15


def expected_dcs(query, every, brokers):
    """The DCs a query must return series for: every DC with a host, the broker DCs, or none."""
    return {dashboard.EVERY: set(every), dashboard.BROKERS: set(brokers)}.get(query.dcs, set())


def coverage_problems(results, every, brokers):
    """What keeps the panels from showing every DC; [] when none.

    results: [(panel title, query, [labels of each series the range query returned])].
    """
    problems = []
    for title, query, series in results:
        if not series:
            problems.append(f"{title}: {query.expr} returned nothing")
            continue
        missing = expected_dcs(query, every, brokers) - {labels.get("dc") for labels in series}
        if missing:
            problems.append(f"{title}: {query.expr} returned no series for {', '.join(sorted(missing))}")
    return problems


def evaluate(prometheus, start, end):
    """[(panel title, query, [labels])] of every query of every panel over [start, end]."""
    return [
        (panel.title, query, [labels for labels, _ in prometheus.query_range(query.promql(), start, end, STEP_SECONDS)])
        for panel in dashboard.panels()
        for query in panel.queries
    ]


def main_panels_data(prometheus, start, end, marks):
    """The main panels' series over [start, end] with the drill's marks ({name: epoch seconds}), as JSON data."""
    panels = []
    for panel in dashboard.panels():
        if not panel.main:
            continue
        queries = []
        for query in panel.queries:
            series = prometheus.query_range(query.promql(), start, end, STEP_SECONDS)
            queries.append({"legend": query.legend, "series": [{"labels": lab, "points": pts} for lab, pts in series]})
        panels.append({"title": panel.title, "unit": panel.unit, "queries": queries})
    return {"start": start, "end": end, "marks": marks, "panels": panels}


def write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")
