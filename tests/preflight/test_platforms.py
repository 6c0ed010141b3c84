"""A host on an operating system the roles do not support is refused before anything changes.

site.yml reads every host's operating system first, before any host is
touched (the platform role), and refuses one that is not Debian 12 or 13,
naming the host, what it runs and what is supported. Here the hosts are
real containers of the testbed's Debian 12 image that say they are Debian 11
and Ubuntu 24.04 (their /etc/os-release and /etc/debian_version rewritten:
the facts Ansible reads come from them), reached with podman's connection;
nothing on them may change.
"""

import subprocess
import uuid

import pytest
import yaml
from test_preflight_playbook import base_inventory, groups

from testkit.playbook import run as run_playbook

# make unit runs tests/preflight two at a time: the module fixtures of this file run once, in one worker.
pytestmark = pytest.mark.xdist_group("platforms")

IMAGE = "localhost/stretch-kafka-node:bookworm"
OS_RELEASE = {
    "bullseye": "\n".join(
        [
            'NAME="Debian GNU/Linux"',
            'VERSION_ID="11"',
            'VERSION="11 (bullseye)"',
            "VERSION_CODENAME=bullseye",
            "ID=debian",
        ]
    ),
    "noble": "\n".join(
        [
            'NAME="Ubuntu"',
            'VERSION_ID="24.04"',
            'VERSION="24.04 LTS (Noble Numbat)"',
            "VERSION_CODENAME=noble",
            "ID=ubuntu",
        ]
    ),
}


def podman(*args, check=True, stdin=None):
    return subprocess.run(["podman", *args], input=stdin, capture_output=True, text=True, timeout=120, check=check)


@pytest.fixture(scope="module")
def hosts():
    """{codename: container name} of two running containers that claim another operating system."""
    if podman("image", "exists", IMAGE, check=False).returncode != 0:
        pytest.fail(f"{IMAGE} is missing: make setup-testbed builds it")
    names = {}
    try:
        for codename, text in OS_RELEASE.items():
            name = f"stretch-os-{codename}-{uuid.uuid4().hex[:6]}"
            podman("run", "-d", "--name", name, "--network", "none", IMAGE, "sleep", "600")
            names[codename] = name
            podman("exec", "-i", name, "sh", "-c", "rm -f /etc/os-release && cat >/etc/os-release", stdin=text + "\n")
            # Debian's own version file, which Ansible's facts read too.
            version = {"bullseye": "11.11", "noble": "trixie/sid"}[codename]
            podman("exec", name, "sh", "-c", f"echo {version} >/etc/debian_version")
        yield names
    finally:
        for name in names.values():
            podman("rm", "-f", "-t", "0", name, check=False)


def changed_nothing(name):
    """What site.yml would have left on a node it got to: the kafka user, /opt/kafka, a sysctl.d file."""
    found = podman("exec", name, "sh", "-c", "id kafka; ls -d /opt/kafka /etc/sysctl.d/60-kafka.conf", check=False)
    return found.stdout.strip() == ""


def test_site_refuses_hosts_of_another_os_naming_each_before_changing_anything(hosts, tmp_path):
    inventory = base_inventory()
    dcs = groups(inventory)
    inventory["all"]["vars"].update(
        ansible_connection="containers.podman.podman", ansible_python_interpreter="/usr/bin/python3"
    )
    for dc, codename in (("dc1", "bullseye"), ("dc2", "noble"), ("dc3", "noble")):
        dcs[dc]["vars"]["ansible_host"] = hosts[codename]
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    result = run_playbook(path, "site", "--tags", "nodes", timeout=300)
    out = result.text + result.stderr
    assert result.returncode != 0, out
    supported = "the roles support Debian 12 (bookworm), Debian 13 (trixie)"
    assert f"dc1-broker0 runs Debian 11 (bullseye): {supported}" in out
    assert f"dc2-broker1 runs Ubuntu 24 (noble): {supported}" in out
    assert f"dc3-controller0 runs Ubuntu 24 (noble): {supported}" in out
    played = [play["play"]["name"] for play in result.output["plays"]]
    assert played[-1] == "Refuse hosts on an operating system the roles do not support", played
    assert sum(stats.get("changed", 0) for stats in result.recap.values()) == 0
    assert all(changed_nothing(name) for name in hosts.values())
