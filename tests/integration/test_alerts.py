"""A real Prometheus with the roles' targets and rules: every node scraped with its DC and role, every metric the
rules read served, and no alert on the healthy cluster. The DC-loss drill checks that the alerts fire and resolve."""

import time

from tests.alert_rules import metrics_read
from tests.cluster import wait_until
from tests.prometheus import INTERVAL_SECONDS


def test_every_node_is_scraped_with_its_dc_and_role(prometheus, cluster):
    labels = {m["node"]: (m["dc"], m["role"]) for m, value in prometheus.query("up") if value == 1}
    assert labels == {n.host: (n.dc, "+".join(sorted(n.roles))) for n in cluster.nodes}


def test_every_metric_the_rules_read_is_served(prometheus):
    missing = {}
    for metric in sorted(metrics_read()):
        if not wait_until(lambda m=metric: prometheus.query(f"count({m})"), timeout=30, interval=5):
            missing[metric] = "no series"
    assert missing == {}


def test_the_healthy_cluster_fires_no_alert(prometheus):
    # Every rule evaluated at least twice on scraped data: a rule whose
    # condition holds is pending from its first evaluation on.
    time.sleep(3 * INTERVAL_SECONDS)
    assert prometheus.alerts("firing") == []
    assert prometheus.alerts("pending") == []
