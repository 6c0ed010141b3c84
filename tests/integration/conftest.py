import time

import pytest
import testinfra

from . import inventory


@pytest.fixture(scope="session")
def cluster():
    return inventory.load()


@pytest.fixture(scope="session")
def hosts(cluster):
    hosts = {}
    for node in cluster.nodes:
        spec, kwargs = node.testinfra_spec()
        hosts[node.host] = testinfra.get_host(spec, **kwargs)
    return hosts


def wait_until(check, timeout=90, interval=2):
    """Poll check() until it returns a truthy value; return its last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)
