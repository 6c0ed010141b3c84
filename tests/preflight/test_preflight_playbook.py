"""playbooks/preflight.yml (and site.yml, which runs it first) against bad and good inventories.

Every host points at a closed port on the loopback address, so any attempt
to connect would show up as UNREACHABLE: the checks must fail, or pass,
without one.
"""

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def base_inventory(dcs=("dc1", "dc2", "dc3"), voters=(1, 1, 1), brokers=(2, 2)):
    dc_groups = {dc: {"hosts": {}, "vars": {"kafka_rack": dc}} for dc in dcs}
    controllers, broker_hosts = {}, {}
    for i, count in enumerate(voters):
        for j in range(count):
            host = f"{dcs[i]}-controller{j}"
            controllers[host] = {"kafka_node_id": (i + 1) * 10 + j}
            dc_groups[dcs[i]]["hosts"][host] = None
    for i, count in enumerate(brokers):
        for j in range(count):
            host = f"{dcs[i]}-broker{j}"
            broker_hosts[host] = {"kafka_node_id": (i + 1) * 100 + j}
            dc_groups[dcs[i]]["hosts"][host] = None
    return {
        "all": {
            "vars": {
                "ansible_connection": "ssh",
                "ansible_host": "127.0.0.1",
                "ansible_port": 1,
                "kafka_archive_url": "https://downloads.example.invalid/kafka.tgz",
                "kafka_archive_checksum": "sha512:00",
            },
            "children": {
                "kafka_controllers": {"hosts": controllers},
                "kafka_brokers": {"hosts": broker_hosts},
                **dc_groups,
            },
        }
    }


def run(playbook, inventory, tmp_path, *extra):
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    env = dict(
        os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", PATH=f"{BIN}:{os.environ['PATH']}"
    )
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(path), str(REPO / "playbooks" / playbook), *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


def groups(inv):
    return inv["all"]["children"]


def move(inv, host, dc_from, dc_to):
    del groups(inv)[dc_from]["hosts"][host]
    groups(inv)[dc_to]["hosts"][host] = None


def controllers_in_two_dcs(inv):
    move(inv, "dc3-controller0", "dc3", "dc2")


def one_dc_holds_the_majority(inv):
    for j in (1, 2):
        groups(inv)["kafka_controllers"]["hosts"][f"dc1-controller{j}"] = {"kafka_node_id": 10 + j}
        groups(inv)["dc1"]["hosts"][f"dc1-controller{j}"] = None


def brokers_in_three_dcs(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc3-broker0"] = {"kafka_node_id": 300}
    groups(inv)["dc3"]["hosts"]["dc3-broker0"] = None


def broker_without_rack(inv):
    del groups(inv)["dc2"]["hosts"]["dc2-broker1"]


def duplicate_node_ids(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_node_id"] = 100


def replication_factor_three(inv):
    inv["all"]["vars"]["kafka_replication_factor"] = 3


def min_insync_equal_to_rf(inv):
    inv["all"]["vars"]["kafka_min_insync_replicas"] = 4


def url_without_checksum(inv):
    inv["all"]["vars"]["kafka_archive_checksum"] = ""


def no_broker_group(inv):
    del groups(inv)["kafka_brokers"]


def topic_wider_than_the_brokers(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 3, "replication_factor": 5}]


def topic_with_a_bad_name(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders/eu", "partitions": 3}]


def quota_on_an_unknown_entity_type(inv):
    inv["all"]["vars"]["kafka_quotas"] = [{"entity": {"ip": "10.0.0.1"}, "quotas": {"producer_byte_rate": 1}}]


def throttle_without_a_rate(inv):
    inv["all"]["vars"]["kafka_replication_throttle"] = "present"
    inv["all"]["vars"]["kafka_replication_throttle_rate"] = 0


BAD = [
    (controllers_in_two_dcs, "controllers span 2 DC(s) (dc1, dc2)"),
    (one_dc_holds_the_majority, "DC dc1 holds 3 of 5 controller voters"),
    (brokers_in_three_dcs, "brokers must be in exactly 2 DCs, found 3"),
    (broker_without_rack, "broker dc2-broker1 has no rack: set kafka_rack"),
    (duplicate_node_ids, "kafka_node_id 100 is used by more than one host: dc1-broker0, dc2-broker1"),
    (replication_factor_three, "default.replication.factor=3 cannot put 2 replicas in each broker DC"),
    (min_insync_equal_to_rf, "min.insync.replicas=4 must be below default.replication.factor=4"),
    (url_without_checksum, "kafka_archive_url is set but kafka_archive_checksum is empty"),
    (no_broker_group, "inventory group 'kafka_brokers' is missing or empty"),
    (topic_wider_than_the_brokers, "kafka_topics: topic 'orders': replication factor 5 is larger than the 4 brokers"),
    (topic_with_a_bad_name, "kafka_topics: topic #0: 'orders/eu' is not a valid topic name"),
    (quota_on_an_unknown_entity_type, "kafka_quotas: quota #0: unknown entity type(s) ['ip']"),
    (throttle_without_a_rate, "kafka_quotas: replication throttle rate must be a positive number"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD, ids=[m.__name__ for m, _ in BAD])
def test_bad_inventory_is_refused_without_connecting(mutate, message, tmp_path):
    inv = copy.deepcopy(base_inventory())
    mutate(inv)
    rc, out = run("preflight.yml", inv, tmp_path)
    assert rc != 0, out
    assert message in out, out
    assert "UNREACHABLE" not in out


@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"voters": (2, 2, 1)},
        {"brokers": (3, 3), "dcs": ("fra", "ams", "ber")},
    ],
    ids=["1-1-1 and 2+2", "2-2-1", "3+3 in fra/ams/ber"],
)
def test_good_inventory_passes_without_connecting(shape, tmp_path):
    rc, out = run("preflight.yml", base_inventory(**shape), tmp_path)
    assert rc == 0, out
    assert "inventory accepted" in out
    assert "UNREACHABLE" not in out


def run_shipped(env):
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", f"inventories/{env}", "playbooks/preflight.yml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, PATH=f"{BIN}:{os.environ['PATH']}", ANSIBLE_NOCOLOR="1"),
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_the_local_inventory_passes():
    rc, out = run_shipped("local")
    assert rc == 0, out
    assert "3 controller voters over 3 DCs (1-1-1" in out


def test_the_production_example_is_refused_only_for_its_missing_checksum():
    # The example ships without the tarball's checksum on purpose: the
    # operator must paste it. Its topology (2-2-1, 3+3) is otherwise valid.
    rc, out = run_shipped("production")
    assert rc != 0
    assert "inventory refused (1 problem(s))" in out, out
    assert "kafka_archive_url is set but kafka_archive_checksum is empty" in out


def test_limit_does_not_hide_a_bad_topology(tmp_path):
    inv = base_inventory()
    controllers_in_two_dcs(inv)
    rc, out = run("preflight.yml", inv, tmp_path, "--limit", "dc1-broker0")
    assert rc != 0
    assert "controllers span 2 DC(s)" in out, out


def test_site_stops_before_touching_any_host(tmp_path):
    inv = base_inventory()
    duplicate_node_ids(inv)
    rc, out = run("site.yml", inv, tmp_path)
    assert rc != 0
    assert "kafka_node_id 100 is used by more than one host" in out
    assert "UNREACHABLE" not in out
    assert "Install, configure and start" not in out, "site.yml went on after preflight failed"


@pytest.mark.parametrize("playbook", ["dc-failover.yml", "dc-recovery.yml"])
@pytest.mark.parametrize("dc", ["dc9", ""])
def test_a_failover_for_a_dc_the_inventory_lacks_touches_no_host(playbook, dc, tmp_path):
    rc, out = run(playbook, base_inventory(), tmp_path, "-e", f"kafka_failover_dc={dc}")
    assert rc != 0, out
    assert f"kafka_failover_dc = '{dc}' is not a DC of this inventory" in out, out
    assert "set it to one of ['dc1', 'dc2', 'dc3']" in out
    assert "UNREACHABLE" not in out
