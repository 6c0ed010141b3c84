"""The Kafka release comes from the site's mirror over HTTPS, checked against its published checksum.

The testbed's inventory points kafka_node_archive_url at the testbed's mirror
(testkit/mirror.py, with a certificate from the testbed's CA), so every
converge installs the way a site with a mirror does. Here a release no node
has unpacked (another Scala build's name) is asked for. Served changed, or
asked of a mirror nobody answers at, it must stop the run naming the URL,
before anything else changes: every node keeps the release it runs, its
configuration and its process.
"""

import hashlib
import shutil

import pytest

from testkit import mirror
from testkit.playbook import run

# A release name no node has: its download is the run's first change.
SCALA = "2.99"


def snapshot(cluster, hosts):
    """{node: (the release it runs, its server.properties' sha256, its process id, what /opt/kafka holds)}."""
    found = {}
    for node in cluster.nodes:
        host = hosts[node.host]
        found[node.host] = (
            host.file("/opt/kafka/current").linked_to,
            host.file("/etc/kafka/server.properties").sha256sum,
            host.check_output("systemctl show --property MainPID --value kafka"),
            sorted(host.check_output("ls /opt/kafka").split()),
        )
    return found


@pytest.fixture
def genuine():
    """(the archive the nodes run, its sha512), and a changed copy published on the mirror under the other name."""
    source = sorted(mirror.ROOT.glob("kafka_2.13-*.tgz"))[-1]
    name = source.name.replace("kafka_2.13-", f"kafka_{SCALA}-")
    tampered = mirror.ROOT / name
    shutil.copyfile(source, tampered)
    with tampered.open("ab") as f:
        f.write(b"\0" * 512)  # what a mirror serving a truncated or altered file would hand out
    digest = hashlib.sha512(source.read_bytes()).hexdigest()
    yield source.name.removesuffix(".tgz").removeprefix("kafka_2.13-"), digest, name
    tampered.unlink(missing_ok=True)


def refused(cluster, hosts, **extra):
    before = snapshot(cluster, hosts)
    proc = run(cluster.inventory, "site", "--tags", "nodes", kafka_node_scala_version=SCALA, **extra)
    assert proc.returncode != 0, "a release that cannot be fetched was installed"
    assert snapshot(cluster, hosts) == before, "a node changed although its release could not be fetched"
    return proc.text


def test_a_mirror_that_serves_a_changed_archive_is_refused_and_no_node_changes(cluster, hosts, genuine):
    version, digest, name = genuine
    text = refused(cluster, hosts, kafka_node_version=version, kafka_node_archive_checksum=f"sha512:{digest}")
    assert f"/{name} was refused: its checksum does not match sha512:{digest}" in text, text[-3000:]


def test_an_unreachable_mirror_is_refused_and_no_node_changes(cluster, hosts, genuine):
    version, digest, name = genuine
    url = "https://{{ testbed_gateway }}:1/" + name
    text = refused(cluster, hosts, kafka_node_version=version, kafka_node_archive_url=url,
                   kafka_node_archive_checksum=f"sha512:{digest}")  # fmt: skip
    assert f":1/{name} was refused: the download failed" in text, text[-3000:]
    assert "Connection refused" in text, text[-3000:]
