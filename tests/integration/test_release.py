"""Each testbed node runs the Debian release its inventory gives it, and that release's Java.

`make test`'s testbed runs both releases the roles support side by side
(examples/consumer/inventory/group_vars/testbed.yml: dc1 on Debian 12, dc2 and
the tiebreaker dc3 on Debian 13); `make test-trixie` brings every node up on
Debian 13 (-e testbed_release=trixie, which outranks the inventory) and says
so with STRETCH_RELEASE=13. Each node's /etc/os-release and its Java (17 on
Debian 12, 21 on 13, which the roles choose per release) are read over SSH as
Ansible reaches them.
"""

import os
import re

VERSIONS = {"bookworm": "12", "trixie": "13"}
JAVA = {"12": "17", "13": "21"}


def wanted(cluster):
    """{host: Debian version} the testbed was brought up with."""
    forced = os.environ.get("STRETCH_RELEASE")
    return {node.host: forced or VERSIONS[node.release] for node in cluster.nodes}


def test_the_inventory_runs_both_releases_unless_one_is_forced(cluster):
    releases = set(wanted(cluster).values())
    assert releases == ({os.environ["STRETCH_RELEASE"]} if "STRETCH_RELEASE" in os.environ else {"12", "13"})


def test_every_node_runs_its_release_and_its_java(cluster, hosts):
    found = {}
    for node in cluster.nodes:
        host = hosts[node.host]
        version = host.check_output(". /etc/os-release && echo $VERSION_ID")
        java = host.check_output("readlink -f /usr/bin/java")  # /usr/lib/jvm/java-17-openjdk-amd64/bin/java
        found[node.host] = (version, re.sub(r".*/(java-\d+)-.*", r"\1", java))
    assert found == {host: (version, f"java-{JAVA[version]}") for host, version in wanted(cluster).items()}
