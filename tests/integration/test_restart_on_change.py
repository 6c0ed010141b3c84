"""A configuration change restarts only the node whose configuration changed.

Converges once with a host-level override for one broker (an inventory
source layered over the cluster's), then once without it. Each node's start
time tells which nodes restarted. Leaves the cluster as it found it.
"""

import pytest
import yaml

from testkit.cluster import start_times
from testkit.playbook import run

# Two converges (minutes): `make verify` runs it; `make test` leaves it out for CI's time (the rolling restart's
# gates and the idempotent converge are in it).
pytestmark = pytest.mark.outside_ci


def converge(cluster, *extra_inventories):
    proc = run([cluster.inventory, *extra_inventories], "site")
    assert proc.returncode == 0, proc.text[-3000:] + proc.stderr[-3000:]
    return proc


def test_changed_configuration_restarts_only_that_node(cluster, hosts, tmp_path):
    target = str(cluster.brokers[-1].host)
    overlay = tmp_path / "overlay.yml"
    overlay.write_text(
        yaml.safe_dump({"all": {"hosts": {target: {"kafka_node_broker_properties": {"num.network.threads": 5}}}}})
    )
    before = start_times(cluster, hosts)

    first = converge(cluster, overlay)
    changed = start_times(cluster, hosts)
    assert "num.network.threads=5" in hosts[target].file("/etc/kafka/server.properties").content_string
    assert [h for h in before if before[h] != changed[h]] == [target]
    # The restart went through the gates, like a rolling restart's.
    assert [r["host"] for r in first.stats["kafka_restarts"]] == [target]

    converge(cluster)
    restored = start_times(cluster, hosts)
    assert "num.network.threads" not in hosts[target].file("/etc/kafka/server.properties").content_string
    assert [h for h in changed if changed[h] != restored[h]] == [target]
    check = hosts[target].check_output("/usr/local/sbin/kafka-restart-pending")
    assert check == "current"
