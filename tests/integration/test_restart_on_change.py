"""A configuration change restarts only the node whose configuration changed.

Converges once with a host-level override for one broker (an inventory
source layered over the cluster's) and a topic declared anew (an extra
variable), then once without them. Each node's start time tells which nodes restarted; the
restart's gates expect only the topics the cluster had, since the converge
creates the new one after its restarts. Leaves the cluster as it found it.
"""

import pytest
import yaml

from testkit.cluster import start_times
from testkit.playbook import run

# Two converges (minutes): `make verify` runs it; `make test` leaves it out for CI's time (the rolling restart's
# gates and the idempotent converge are in it).
pytestmark = pytest.mark.outside_ci


NEW_TOPIC = "restart-new-topic"


def converge(cluster, *extra_inventories, **extra):
    # A gate that waited for a topic the converge has not created yet would time out: a minute says so.
    proc = run([cluster.inventory, *extra_inventories], "site", kafka_ops_gate_timeout=60, **extra)
    assert proc.returncode == 0, proc.text[-3000:] + proc.stderr[-3000:]
    return proc


def drop(cluster, name):
    """(the topic as it was, or None; what its deletion refused), the topic deleted when it was there."""
    admin = cluster.admin(timeout=60)
    try:
        found = admin.topics().get(name)
        return found, admin.delete_topics([name]) if found else {}
    finally:
        admin.close()


def test_changed_configuration_restarts_only_that_node(cluster, hosts, tmp_path):
    target = str(cluster.brokers[-1].host)
    overlay = tmp_path / "overlay.yml"
    overlay.write_text(
        yaml.safe_dump({"all": {"hosts": {target: {"kafka_node_broker_properties": {"num.network.threads": 5}}}}})
    )
    # As an extra variable: the inventory's group_vars would win over an inline overlay's.
    topics = [*cluster.model["declared"]["topics"], {"name": NEW_TOPIC, "partitions": 4}]
    before = start_times(cluster, hosts)

    try:
        first = converge(cluster, overlay, kafka_topics=topics)
    except BaseException:
        drop(cluster, NEW_TOPIC)  # a converge that failed after creating it leaves nothing behind
        raise
    changed = start_times(cluster, hosts)
    assert "num.network.threads=5" in hosts[target].file("/etc/kafka/server.properties").content_string
    assert [h for h in before if before[h] != changed[h]] == [target]
    # The restart went through the gates, like a rolling restart's, and the topic was created after it.
    assert [r["host"] for r in first.stats["kafka_restarts"]] == [target]
    created, failed = drop(cluster, NEW_TOPIC)
    assert created is not None, f"{NEW_TOPIC} was not created after the restart"
    assert len(created["partitions"]) == 4
    assert not failed, f"{NEW_TOPIC} could not be deleted: {failed}"

    converge(cluster)
    restored = start_times(cluster, hosts)
    assert "num.network.threads" not in hosts[target].file("/etc/kafka/server.properties").content_string
    assert [h for h in changed if changed[h] != restored[h]] == [target]
    check = hosts[target].check_output("/usr/local/sbin/kafka-restart-pending")
    assert check == "current"
