"""The testbed's nodes run the Debian release they were built from (`make test-trixie`: every node on Debian 13).

Run against a testbed brought up with `-e testbed_release=...`; each node's
/etc/os-release and its Java (the release's own: 17 on Debian 12, 21 on 13,
which the roles choose per release) are read over SSH as Ansible reaches them.
"""

import os

import pytest

JAVA = {"12": "17", "13": "21"}


@pytest.mark.skipif("STRETCH_RELEASE" not in os.environ, reason="make test-trixie sets STRETCH_RELEASE")
def test_every_node_runs_the_release_and_its_java(cluster, hosts):
    want = os.environ["STRETCH_RELEASE"]
    found = {}
    for node in cluster.nodes:
        host = hosts[node.host]
        version = host.check_output(". /etc/os-release && echo $VERSION_ID")
        java = host.check_output("readlink -f /usr/bin/java")
        found[node.host] = (version, java)
    assert {h: v for h, (v, _) in found.items() if v != want} == {}
    assert {h: j for h, (_, j) in found.items() if f"java-{JAVA[want]}-" not in j} == {}
