"""playbooks/preflight.yml (and site.yml, which runs it first) against bad and good inventories.

Every host points at a closed port on the loopback address, so any attempt
to connect would show up as UNREACHABLE: the checks must fail, or pass,
without one.
"""

import copy
from pathlib import Path

import pytest
import yaml

from tests.playbook import run as run_playbook

REPO = Path(__file__).resolve().parents[2]
PREFLIGHT_PLAYS = [play["name"] for play in yaml.safe_load((REPO / "playbooks/preflight.yml").read_text())]


def base_inventory(dcs=("dc1", "dc2", "dc3"), voters=(1, 1, 1), brokers=(2, 2)):
    dc_groups = {dc: {"hosts": {}, "vars": {"kafka_dc": dc}} for dc in dcs}
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
                "kafka_node_archive_url": "https://downloads.example.invalid/kafka.tgz",
                "kafka_node_archive_checksum": "sha512:00",
            },
            "children": {
                "kafka_controllers": {"hosts": controllers},
                "kafka_brokers": {"hosts": broker_hosts},
                **dc_groups,
            },
        }
    }


def run(playbook, inventory, tmp_path, *extra):
    """Run the playbook against the inventory; (returncode, every message, the Run)."""
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    result = run_playbook(path, playbook.removesuffix(".yml"), *extra, timeout=120)
    return result.returncode, result.text + result.stderr, result


def touched_no_host(result):
    """No host was unreachable (each points at a closed port) and no play past the preflight ran."""
    unreachable = [h for h, s in result.recap.items() if s.get("unreachable")]
    played = [play["play"]["name"] for play in result.output.get("plays", [])]
    return not unreachable and all(name in PREFLIGHT_PLAYS for name in played)


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


def broker_without_dc(inv):
    del groups(inv)["dc2"]["hosts"]["dc2-broker1"]


def duplicate_node_ids(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_node_id"] = 100


def replication_factor_three(inv):
    inv["all"]["vars"]["kafka_replication_factor"] = 3


def min_insync_equal_to_rf(inv):
    inv["all"]["vars"]["kafka_min_insync_replicas"] = 4


def url_without_checksum(inv):
    inv["all"]["vars"]["kafka_node_archive_checksum"] = ""


def no_broker_group(inv):
    del groups(inv)["kafka_brokers"]


def topic_wider_than_the_brokers(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 3, "replication_factor": 5}]


def topic_with_a_bad_name(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders/eu", "partitions": 3}]


def quota_on_an_unknown_entity_type(inv):
    inv["all"]["vars"]["kafka_quotas"] = [{"entity": {"ip": "10.0.0.1"}, "quotas": {"producer_byte_rate": 1}}]


def throttle_without_a_rate(inv):
    inv["all"]["vars"]["kafka_admin_replication_throttle"] = "present"
    inv["all"]["vars"]["kafka_admin_replication_throttle_rate"] = 0


def host_in_two_dc_groups(inv):
    groups(inv)["dc1"]["hosts"]["dc2-broker1"] = None


def dcs_differing_only_in_case(inv):
    groups(inv)["kafka_controllers"]["hosts"]["dc3-controller0"]["kafka_dc"] = "DC2"


def two_nodes_advertising_one_address(inv):
    for host in ("dc1-broker0", "dc1-broker1"):
        groups(inv)["kafka_brokers"]["hosts"][host]["kafka_advertised_host"] = "10.0.1.5"


def two_listeners_on_one_port(inv):
    inv["all"]["vars"]["kafka_listeners"] = {
        "CONTROLLER": {"port": 9093, "protocol": "PLAINTEXT"},
        "REPLICATION": {"port": 9092, "protocol": "PLAINTEXT"},
        "CLIENT": {"port": 9092, "protocol": "PLAINTEXT"},
    }


def a_protocol_kafka_does_not_know(inv):
    inv["all"]["vars"]["kafka_listeners"] = {
        "CONTROLLER": {"port": 9093, "protocol": "PLAINTEXT"},
        "REPLICATION": {"port": 9091, "protocol": "TLS"},
        "CLIENT": {"port": 9092, "protocol": "PLAINTEXT"},
    }


def a_node_id_beyond_kafkas_range(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_node_id"] = 2**31


def an_unroutable_advertised_address(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_advertised_host"] = "0.0.0.0"


def rack_overridden(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_node_properties"] = {"broker.rack": "dc1"}


def min_isr_overridden(inv):
    inv["all"]["vars"]["kafka_node_broker_properties"] = {"min.insync.replicas": 1}


def unclean_election_overridden(inv):
    inv["all"]["vars"]["kafka_node_properties"] = {"unclean.leader.election.enable": True}


BAD = [
    (controllers_in_two_dcs, "controllers span 2 DC(s) (dc1, dc2)"),
    (one_dc_holds_the_majority, "DC dc1 holds 3 of 5 controller voters"),
    (brokers_in_three_dcs, "brokers must be in exactly 2 DCs, found 3"),
    (broker_without_dc, "broker dc2-broker1 has no DC: set kafka_dc"),
    (duplicate_node_ids, "kafka_node_id 100 is used by more than one host: dc1-broker0, dc2-broker1"),
    (replication_factor_three, "default.replication.factor=3 cannot put 2 replicas in each broker DC"),
    (min_insync_equal_to_rf, "min.insync.replicas=4 must be below default.replication.factor=4"),
    (url_without_checksum, "kafka_node_archive_url is set but kafka_node_archive_checksum is empty"),
    (no_broker_group, "inventory group 'kafka_brokers' is missing or empty"),
    (topic_wider_than_the_brokers, "kafka_topics: topic 'orders': replication factor 5 is larger than the 4 brokers"),
    (topic_with_a_bad_name, "kafka_topics: topic #0: 'orders/eu' is not a valid topic name"),
    (quota_on_an_unknown_entity_type, "kafka_quotas: quota #0: unknown entity type(s) ['ip']"),
    (throttle_without_a_rate, "kafka_quotas: replication throttle rate must be a positive number"),
    (host_in_two_dc_groups, "dc2-broker1 is in the groups of 2 DCs (dc1, dc2): its DC is ambiguous"),
    (dcs_differing_only_in_case, "kafka_dc values differ only in case or spacing: 'DC2' (dc3-controller0); 'dc2'"),
    (two_nodes_advertising_one_address, "dc1-broker0, dc1-broker1 all advertise 10.0.1.5:9091"),
    (two_listeners_on_one_port, "kafka_listeners: CLIENT, REPLICATION listen on the same port 9092"),
    (a_protocol_kafka_does_not_know, "kafka_listeners.REPLICATION.protocol='TLS' is not one of PLAINTEXT"),
    (a_node_id_beyond_kafkas_range, "dc2-broker1: kafka_node_id=2147483648 is not an integer from 0 to 2147483647"),
    (an_unroutable_advertised_address, "dc2-broker1: listener REPLICATION would advertise 0.0.0.0:9091"),
    (rack_overridden, "dc2-broker1: kafka_node_properties sets broker.rack, which the roles derive from kafka_dc"),
    (
        min_isr_overridden,
        "kafka_node_broker_properties sets min.insync.replicas, which the roles derive from kafka_min_insync_replicas",
    ),
    (unclean_election_overridden, "kafka_node_properties sets unclean.leader.election.enable"),
]


@pytest.mark.parametrize(("mutate", "message"), BAD, ids=[m.__name__ for m, _ in BAD])
def test_bad_inventory_is_refused_without_connecting(mutate, message, tmp_path):
    inv = copy.deepcopy(base_inventory())
    mutate(inv)
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc != 0, out
    assert message in out, out
    assert touched_no_host(result)


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
    rc, out, result = run("preflight.yml", base_inventory(**shape), tmp_path)
    assert rc == 0, out
    assert "inventory accepted" in out
    assert touched_no_host(result)


def run_shipped(env):
    result = run_playbook(REPO / "inventories" / env, "preflight", timeout=120)
    return result.returncode, result.text + result.stderr


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
    assert "kafka_node_archive_url is set but kafka_node_archive_checksum is empty" in out


def test_limit_does_not_hide_a_bad_topology(tmp_path):
    inv = base_inventory()
    controllers_in_two_dcs(inv)
    rc, out, _ = run("preflight.yml", inv, tmp_path, "--limit", "dc1-broker0")
    assert rc != 0
    assert "controllers span 2 DC(s)" in out, out


def test_site_stops_before_touching_any_host(tmp_path):
    inv = base_inventory()
    duplicate_node_ids(inv)
    rc, out, result = run("site.yml", inv, tmp_path)
    assert rc != 0
    assert "kafka_node_id 100 is used by more than one host" in out
    assert touched_no_host(result), "site.yml went on after preflight failed"


@pytest.mark.parametrize("playbook", ["dc-failover.yml", "dc-recovery.yml"])
@pytest.mark.parametrize("dc", ["dc9", ""])
def test_a_failover_for_a_dc_the_inventory_lacks_touches_no_host(playbook, dc, tmp_path):
    rc, out, result = run(playbook, base_inventory(), tmp_path, "-e", f"kafka_ops_failover_dc={dc}")
    assert rc != 0, out
    assert f"kafka_ops_failover_dc = '{dc}' is not a DC of this inventory" in out, out
    assert "set it to one of ['dc1', 'dc2', 'dc3']" in out
    unreachable = [h for h, s in result.recap.items() if s.get("unreachable")]
    assert not unreachable
    assert not [p for p in result.output["plays"] if p["play"]["name"] == "Take down every node of the DC"]
