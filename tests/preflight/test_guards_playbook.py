"""Guards that must fail closed, run through the real ansible-playbook with no cluster to read.

Every host points at a closed port, so a task that reached one would show it
as UNREACHABLE; the admin runner (the Ansible controller) finds no broker at
the closed addresses the nodes advertise (no_cluster). A guard that cannot read the cluster must stop
the run there, before it acts on a guess. The release guard's broker runs on
this machine through a local connection, its files in a temporary directory,
and its read of the cluster's features over the admin protocol finds no broker.
"""

import grp
import hashlib
import os
import pwd
from pathlib import Path

import yaml
from test_preflight_playbook import base_inventory, groups, make_certificates

from testkit.leaks import leaks
from testkit.playbook import run as run_playbook

HERE = Path(__file__).resolve().parent
NO_CLUSTER = {
    # The admin listener on port 1, where no_cluster() advertises every node
    # at a loopback address of its own: the admin modules' connection the
    # cluster model derives (kafka_cluster.admin) has only closed addresses.
    # And a short bootstrap, so each read fails in about a second.
    "kafka_listeners": {
        "CONTROLLER": {"port": 9093, "protocol": "SSL"},
        "REPLICATION": {"port": 1, "protocol": "SSL"},
        "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
    },
    "kafka_adminclient_config": {"bootstrap_timeout_ms": 1000},
    "kafka_ops_gate_timeout": 1,
}


def no_cluster(inv):
    """The inventory with every node advertised at a loopback address of its own; {host: address}."""
    hosts = [h for g in ("kafka_controllers", "kafka_brokers") for h in groups(inv)[g]["hosts"]]
    addresses = {host: f"127.0.1.{i + 1}" for i, host in enumerate(hosts)}
    for group in ("kafka_controllers", "kafka_brokers"):
        for host, hostvars in groups(inv)[group]["hosts"].items():
            hostvars["kafka_advertised_host"] = addresses[host]
    return addresses


def unreachable(result):
    return sorted(h for h, s in result.recap.items() if s.get("unreachable"))


def on_this_machine(inv, **hostvars):
    """The first broker, run on this machine through a local connection, with hostvars."""
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    groups(inv)["kafka_brokers"]["hosts"]["dc1-broker0"].update(local, **hostvars)
    return inv


def run(playbook, inventory, tmp_path, *args, **extra):
    """Run tests/preflight/playbooks/<playbook> against the inventory; (returncode, every message, the Run)."""
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    result = run_playbook(path, str(HERE / "playbooks" / playbook), *args, timeout=180, **extra)
    return result.returncode, result.text + result.stderr, result


def test_a_broker_is_not_unregistered_when_its_registration_cannot_be_read(tmp_path):
    inv = base_inventory()
    no_cluster(inv)
    rc, out, result = run("broker_unregister.yml", inv, tmp_path, kafka_ops_retire_broker="dc2-broker1", **NO_CLUSTER)
    assert rc != 0, out
    assert "gate broker_stopped for node 201 still blocked" in out, out
    assert "cannot read the registered brokers" in out, out
    assert not result.results("Run kafka-cluster"), "kafka-cluster unregister ran on a guess"
    assert unreachable(result) == [], "a host was contacted to unregister the broker"


def test_a_release_change_on_a_formatted_broker_is_refused_when_the_features_cannot_be_read(tmp_path):
    # The first broker runs on this machine (a local connection) with its
    # files in tmp_path: formatted, its current link on 4.2.0, its service not
    # running, and no Kafka tool to read the cluster with.
    root = tmp_path / "opt"
    (root / "kafka_2.13-4.2.0").mkdir(parents=True)
    (root / "current").symlink_to(root / "kafka_2.13-4.2.0")
    metadata = tmp_path / "metadata"
    metadata.mkdir()
    (metadata / "meta.properties").write_text("cluster.id=q1Sh-9_ISia_zwGINzRvyQ\nnode.id=100\nversion=1\n")
    paths = {"kafka_node_install_root": str(root), "kafka_node_metadata_log_dir": str(metadata)}
    inv = on_this_machine(base_inventory(), **paths)
    no_cluster(inv)
    rc, out, result = run("release_guard.yml", inv, tmp_path, **NO_CLUSTER)
    assert rc != 0, out
    assert "kafka_node_version=4.3.1 changes the release of dc1-broker0 in a formatted cluster" in out, out
    assert "the cluster's finalized features could not be read (AdminError: no broker answered" in out, out
    assert unreachable(result) == []


def test_a_release_change_on_a_broker_never_formatted_is_let_through(tmp_path):
    root = tmp_path / "opt"
    (root / "kafka_2.13-4.2.0").mkdir(parents=True)
    (root / "current").symlink_to(root / "kafka_2.13-4.2.0")
    unformatted = str(tmp_path / "metadata")
    inv = on_this_machine(base_inventory(), kafka_node_install_root=str(root), kafka_node_metadata_log_dir=unformatted)
    no_cluster(inv)
    rc, out, result = run("release_guard.yml", inv, tmp_path, **NO_CLUSTER)
    assert rc == 0, out
    [(_, guard)] = result.results("Read the finalized features from any broker")
    assert (guard["read"], guard["refusals"]) == (False, []), guard
    assert guard["notes"][0].startswith("no node is formatted and no broker answered"), guard


def test_an_operators_key_is_installed_without_showing_in_the_output(tmp_path):
    # The first broker, on this machine, installs a key and a certificate the
    # operator provides, with --diff at full verbosity: the key reaches its
    # file, mode 0600, and nothing of it shows in what ansible-playbook printed.
    pki = tmp_path / "pki"
    pki.mkdir()
    files = make_certificates(pki, ["dc1-broker0"])["dc1-broker0"]
    tls = tmp_path / "tls"
    (tls / "keystore.d").mkdir(parents=True)
    me, my_group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
    inv = on_this_machine(
        base_inventory(), kafka_tls_dir=str(tls), kafka_node_user=me, kafka_node_group=my_group, **files
    )
    inv["all"]["vars"].update(kafka_tls_certificates="provided", kafka_tls_ca_src=str(pki / "ca.crt"))
    rc, out, result = run("node_tls.yml", inv, tmp_path, "--diff", "-vvvv")
    assert rc == 0, out
    installed = tls / "keystore.d/10-node.key"
    assert installed.read_text() == Path(files["kafka_node_tls_key_src"]).read_text()
    assert installed.stat().st_mode & 0o777 == 0o600
    assert leaks(result.stdout + result.stderr, key_files=[installed]) == []


def unpacked(tmp_path, archive_bytes=b"the release archive\n"):
    """A node's install root holding kafka_2.13-4.3.1 unpacked beside the archive it came from (and the metrics
    agent); the host variables that put the first broker's install there, from a local file as its source."""
    root = tmp_path / "opt"
    (root / "kafka_2.13-4.3.1" / "libs").mkdir(parents=True)
    (root / "kafka_2.13-4.3.1.tgz").write_bytes(archive_bytes)
    agent = root / "jmx_prometheus_javaagent-1.0.1.jar"
    agent.write_bytes(b"the agent\n")
    return {
        "kafka_node_install_root": str(root),
        "kafka_node_java_packages": ["coreutils"],
        "kafka_node_archive_url": (tmp_path / "mirror" / "kafka_2.13-4.3.1.tgz").as_uri(),
        "kafka_node_metrics_agent_url": (tmp_path / "mirror" / "agent.jar").as_uri(),
        "kafka_node_metrics_agent_checksum": "sha256:" + hashlib.sha256(agent.read_bytes()).hexdigest(),
    }


def test_a_release_unpacked_from_the_archive_its_checksum_names_is_kept_and_nothing_fetched(tmp_path):
    paths = unpacked(tmp_path)
    checksum = "sha512:" + hashlib.sha512(b"the release archive\n").hexdigest()
    inv = on_this_machine(base_inventory(), kafka_node_archive_checksum=checksum, **paths)
    rc, out, result = run("release.yml", inv, tmp_path)
    assert rc == 0, out
    assert result.changed == 0, out


def test_a_release_unpacked_before_its_checksum_changed_is_refused_before_anything_is_fetched(tmp_path):
    # The checksum was corrected after the release was unpacked (a tampered or mistaken download): the node keeps
    # running what the inventory no longer names unless the unpacked release is checked again.
    paths = unpacked(tmp_path)
    corrected = "sha512:" + hashlib.sha512(b"the archive Apache published\n").hexdigest()
    inv = on_this_machine(base_inventory(), kafka_node_archive_checksum=corrected, **paths)
    rc, out, result = run("release.yml", inv, tmp_path)
    assert rc != 0, out
    assert (
        f"dc1-broker0: the release unpacked from {tmp_path}/opt/kafka_2.13-4.3.1.tgz is not the one "
        "kafka_node_archive_checksum names"
    ) in out, out
    assert result.changed == 0, "the node was changed before the refusal"
