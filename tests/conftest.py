"""Fixtures shared by the integration tests and the drills: the cluster the inventory describes, and its hosts."""

import pytest
import testinfra

from testkit import cluster as inventory
from testkit.alert_rules import alerts
from testkit.cluster import committed_group, wait_until
from testkit.prometheus import Prometheus, rules_problems, write_rules

# The second converge of the deployed testbed (Molecule's converge is the first): it must change nothing, so it
# runs before any other test has run a playbook against the cluster.
SECOND_CONVERGE = "test_consumer_project.py::test_the_installed_artifact_converges_the_testbed"


def pytest_collection_modifyitems(items):
    """Puts the second converge first; the rest keep their order."""
    items.sort(key=lambda item: SECOND_CONVERGE not in item.nodeid)


@pytest.fixture(scope="session")
def cluster():
    return inventory.load()


@pytest.fixture(scope="session")
def hosts(cluster):
    """testinfra hosts, reached over SSH as Ansible reaches them."""
    return {
        node.host: testinfra.get_host(node.testinfra_spec()[0], **node.testinfra_spec()[1]) for node in cluster.nodes
    }


@pytest.fixture(scope="session")
def monitoring_rules(cluster, tmp_path_factory):
    """What playbooks/monitoring.yml writes for the cluster, written once for every module's Prometheus: a run
    takes about 20 s and writes the same files each time."""
    return write_rules(cluster, tmp_path_factory.mktemp("monitoring") / "rules")


@pytest.fixture(scope="module")
def prometheus(cluster, monitoring_rules, tmp_path_factory):
    """A real Prometheus scraping every node with the roles' targets and alert rules, once every target is up."""
    with Prometheus(cluster, tmp_path_factory.mktemp("prometheus"), monitoring_rules) as running:
        up = wait_until(lambda: set(running.targets().values()) == {"up"} and running.query("up"), timeout=90)
        assert up, f"not every target up in 90 s: {running.targets()}"
        # Every rule of the role's file loaded and evaluated without error:
        # without them, "no alert fires" would hold for any cluster.
        expected = [rule["alert"] for rule in alerts()]
        loaded = wait_until(lambda: not rules_problems(running.rules(), expected), timeout=60, interval=2)
        assert loaded, rules_problems(running.rules(), expected)
        yield running


@pytest.fixture(scope="module")
def a_group(cluster):
    """A consumer group with a committed offset and no member, as every cluster with readers has: the cluster's
    exporter reports the lag and members of the groups the cluster lists, and a testbed just converged (or one
    whose load harness commits nothing) has none."""
    with committed_group(cluster) as group:
        yield group
