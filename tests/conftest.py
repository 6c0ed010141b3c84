"""Fixtures shared by the integration tests and the drills: the cluster the inventory describes, and its hosts."""

import pytest
import testinfra

from tests import cluster as inventory


@pytest.fixture(scope="session")
def cluster():
    return inventory.load()


@pytest.fixture(scope="session")
def hosts(cluster):
    """testinfra hosts, reached over SSH as Ansible reaches them."""
    return {
        node.host: testinfra.get_host(node.testinfra_spec()[0], **node.testinfra_spec()[1]) for node in cluster.nodes
    }
