"""playbooks/preflight.yml (and site.yml, which runs it first) against bad and good inventories.

Every host points at a closed port on the loopback address, so any attempt
to connect would show up as UNREACHABLE: the checks must fail, or pass,
without one.
"""

import copy
import datetime
import json
from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from testkit.playbook import run as run_playbook

REPO = Path(__file__).resolve().parents[2]
# The plays of preflight.yml, the scope check it imports first among them.
PREFLIGHT_PLAYS = [
    play["name"]
    for name in ("preflight.yml", "run_scope.yml")
    for play in yaml.safe_load((REPO / "playbooks" / name).read_text())
    if "hosts" in play
]


# A checksum of the right shape for a download no test makes.
CHECKSUM = "sha512:" + "0" * 128

# Values that must never show in Ansible's output, whatever the verbosity.
SECRETS = {
    "smoke": "smoke-secret-9e2d71",
    "ca": "ca-secret-41c7e2",
    "spark-dc1": "spark-dc1-secret-5b07c3e1",
    "spark-dc2": "spark-dc2-secret-0d9a6f24",
}


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
                "kafka_node_archive_checksum": CHECKSUM,
                # Secure by default: clients log in with SCRAM.
                "kafka_users": [{"name": "kafka-smoke", "password": SECRETS["smoke"]}],
                "kafka_tls_ca_passphrase": SECRETS["ca"],
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


def min_insync_of_one(inv):
    inv["all"]["vars"]["kafka_min_insync_replicas"] = 1


def a_failover_that_relaxes_to_one(inv):
    inv["all"]["vars"]["kafka_ops_failover_min_insync_replicas"] = 1


def a_cluster_wide_target_of_one(inv):
    inv["all"]["vars"]["kafka_admin_min_isr_target"] = 1


def a_topic_with_min_insync_of_one(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": 1}}]


def a_topic_whose_min_insync_replicas_is_its_replication_factor(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": 4}}]


def a_topic_whose_min_insync_replicas_is_above_its_replication_factor(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": 5}}]


def admin_settings_that_turn_hostname_verification_off(inv):
    inv["all"]["vars"]["kafka_adminclient_config"] = {"request_timeout_ms": 60000, "ssl_check_hostname": False}


def url_without_checksum(inv):
    inv["all"]["vars"]["kafka_node_archive_checksum"] = ""


def a_listener_without_a_port(inv):
    inv["all"]["vars"]["kafka_listeners"] = {
        "CONTROLLER": {"port": 9093, "protocol": "SSL"},
        "REPLICATION": {"port": 9091, "protocol": "SSL"},
        "CLIENT": {"protocol": "SASL_SSL"},
    }


def a_dc_group_without_its_dc(inv):
    # dc3 holds only the tiebreaker controller; its group sets no kafka_dc.
    del groups(inv)["dc3"]["vars"]


def no_broker_group(inv):
    del groups(inv)["kafka_brokers"]


def topic_wider_than_the_brokers(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 3, "replication_factor": 5}]


def topics_more_than_the_open_files_hold(inv):
    # 4,000 partitions of RF 4 on 2 + 2 brokers: each holds every one, with the roles' own and the internal topics'.
    inv["all"]["vars"]["kafka_topics"] = [{"name": f"t{i}", "partitions": 1000} for i in range(4)]
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_node_nofile_limit"] = 10000


def a_max_map_count_below_what_the_segments_need(inv):
    inv["all"]["vars"]["kafka_topics"] = [{"name": "orders", "partitions": 20000}]
    inv["all"]["vars"]["kafka_node_sysctl"] = {"vm.max_map_count": 65530}


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


def a_dc_name_with_a_line_break(inv):
    groups(inv)["dc2"]["vars"]["kafka_dc"] = "dc2\nallow.everyone.if.no.acl.found=true"


def a_dc_name_ending_in_a_line_break(inv):
    # What a YAML block scalar (kafka_dc: |) gives.
    groups(inv)["dc2"]["vars"]["kafka_dc"] = "dc2\n"


def a_dc_name_beyond_ascii(inv):
    groups(inv)["dc1"]["vars"]["kafka_dc"] = "zürich"


def an_advertised_address_with_a_line_break(inv):
    groups(inv)["kafka_brokers"]["hosts"]["dc2-broker1"]["kafka_advertised_host"] = "10.0.2.11\nsuper.users=User:x"


def a_super_user_holding_the_separator(inv):
    inv["all"]["vars"]["kafka_super_users"] = ["ops;User:mallory"]


def two_nodes_advertising_one_address(inv):
    for host in ("dc1-broker0", "dc1-broker1"):
        groups(inv)["kafka_brokers"]["hosts"][host]["kafka_advertised_host"] = "10.0.1.5"


def listeners(inv, **protocols):
    """The default listeners with some protocols or ports changed: NAME=protocol or NAME=(protocol, port)."""
    current = {
        "CONTROLLER": {"port": 9093, "protocol": "SSL"},
        "REPLICATION": {"port": 9091, "protocol": "SSL"},
        "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
    }
    for name, value in protocols.items():
        protocol, port = value if isinstance(value, tuple) else (value, current[name]["port"])
        current[name] = {"port": port, "protocol": protocol}
    inv["all"]["vars"]["kafka_listeners"] = current


def two_listeners_on_one_port(inv):
    listeners(inv, REPLICATION=("SSL", 9092))


def a_protocol_kafka_does_not_know(inv):
    listeners(inv, REPLICATION="TLS")


def a_plaintext_client_listener(inv):
    listeners(inv, CLIENT="PLAINTEXT")


def scram_between_controllers(inv):
    listeners(inv, CONTROLLER="SASL_SSL")


def scram_clients_but_no_user(inv):
    inv["all"]["vars"]["kafka_users"] = []


def a_canary_user_that_is_not_declared(inv):
    inv["all"]["vars"]["kafka_users"] = [{"name": "etl", "password": "etl-password"}]


def a_streaming_job_whose_user_is_not_declared(inv):
    inv["all"]["vars"]["kafka_stream_topics"] = ["orders"]


def a_short_password(inv):
    inv["all"]["vars"]["kafka_users"] = [{"name": "kafka-smoke", "password": "short"}]


def an_acl_on_an_unknown_resource(inv):
    inv["all"]["vars"]["kafka_acls"] = [
        {"principal": "User:etl", "resource": {"type": "table", "name": "orders"}, "operations": ["read"]}
    ]


def provided_certificates_without_files(inv):
    inv["all"]["vars"]["kafka_tls_certificates"] = "provided"


def add_spark(inv, dc="dc1", **hostvars):
    """A Spark node in dc that runs a master and a worker, with its DC's secret unless hostvars set one."""
    host = f"{dc}-spark"
    hostvars.setdefault("spark_auth_secret", SECRETS[f"spark-{dc}"])
    groups(inv).setdefault("spark_masters", {"hosts": {}})["hosts"][host] = hostvars
    groups(inv).setdefault("spark_workers", {"hosts": {}})["hosts"][host] = None
    groups(inv)[dc]["hosts"][host] = None


def add_spark_worker(inv, host, dc, **hostvars):
    """Another worker of dc's Spark cluster."""
    groups(inv)["spark_workers"]["hosts"][host] = {"spark_archive_src": "/srv/spark.tgz", **hostvars}
    groups(inv)[dc]["hosts"][host] = None


def a_spark_download_without_checksum(inv):
    add_spark(inv)


def a_spark_worker_with_a_bad_master_url(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz", spark_master_url="http://m1:8080")


def a_spark_cluster_without_a_secret(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz")
    del groups(inv)["spark_masters"]["hosts"]["dc1-spark"]["spark_auth_secret"]


def a_spark_cluster_with_an_empty_secret(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz", spark_auth_secret="")


def a_spark_cluster_with_a_short_secret(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz", spark_auth_secret="short-secret")


def a_spark_master_with_the_rest_server_on(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz", spark_properties={"spark.master.rest.enabled": True})


def spark_settings_that_turn_encryption_off(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz", spark_properties={"spark.network.crypto.enabled": False})


def two_dcs_sharing_a_spark_secret(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz")
    add_spark(inv, "dc2", spark_archive_src="/srv/spark.tgz", spark_auth_secret=SECRETS["spark-dc1"])


def a_spark_worker_with_another_secret_than_its_master(inv):
    add_spark(inv, spark_archive_src="/srv/spark.tgz")
    add_spark_worker(inv, "dc1-spark-worker2", "dc1", spark_auth_secret=SECRETS["spark-dc2"])


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


def a_wan_link_without_bandwidth(inv):
    inv["all"]["vars"]["kafka_wan_link"] = {"bandwidth_mbit": 0, "rtt_ms": 30}


def a_wan_link_whose_rtt_is_not_a_number(inv):
    inv["all"]["vars"]["kafka_wan_link"] = {"bandwidth_mbit": 10000, "rtt_ms": "thirty"}


def a_checksum_of_another_algorithm(inv):
    inv["all"]["vars"]["kafka_node_archive_checksum"] = "md5:" + "0" * 32


def a_metrics_agent_without_checksum(inv):
    inv["all"]["vars"]["kafka_node_metrics_agent_checksum"] = ""


def a_checksum_cut_short(inv):
    inv["all"]["vars"]["kafka_node_archive_checksum"] = "sha512:" + "0" * 64


BAD = [
    (controllers_in_two_dcs, "controllers span 2 DC(s) (dc1, dc2)"),
    (one_dc_holds_the_majority, "DC dc1 holds 3 of 5 controller voters"),
    (brokers_in_three_dcs, "brokers must be in exactly 2 DCs, found 3"),
    (broker_without_dc, "broker dc2-broker1 has no DC: set kafka_dc"),
    (duplicate_node_ids, "kafka_node_id 100 is used by more than one host: dc1-broker0, dc2-broker1"),
    (replication_factor_three, "default.replication.factor=3 cannot put 2 replicas in each broker DC"),
    (min_insync_equal_to_rf, "min.insync.replicas=4 must be below default.replication.factor=4"),
    (
        min_insync_of_one,
        "kafka_min_insync_replicas=1: an acks=all write would be acknowledged by one replica alone and lost with its "
        "broker; set it to 2 or more, or set kafka_min_insync_replicas_one_opt_in: true to accept that",
    ),
    (a_failover_that_relaxes_to_one, "kafka_ops_failover_min_insync_replicas=1: an acks=all write would be"),
    (a_cluster_wide_target_of_one, "kafka_admin_min_isr_target=1: an acks=all write would be"),
    (a_topic_with_min_insync_of_one, "kafka_topics: topic 'orders': min.insync.replicas=1: an acks=all write would"),
    (
        a_topic_whose_min_insync_replicas_is_its_replication_factor,
        "kafka_topics: topic 'orders': min.insync.replicas=4 must be below its replication factor 4",
    ),
    (
        a_topic_whose_min_insync_replicas_is_above_its_replication_factor,
        "kafka_topics: topic 'orders': min.insync.replicas=5 must be below its replication factor 4",
    ),
    (
        admin_settings_that_turn_hostname_verification_off,
        "kafka_adminclient_config sets ssl_check_hostname, which the roles derive from the roles (hostname "
        "verification stays on)",
    ),
    (url_without_checksum, "kafka_node_archive_url is set but kafka_node_archive_checksum is empty"),
    (no_broker_group, "inventory group 'kafka_brokers' is missing or empty"),
    (a_listener_without_a_port, "dc1-broker0: listener CLIENT has no port: set kafka_listeners.CLIENT.port"),
    (a_dc_group_without_its_dc, "controller(s) dc3-controller0 have no kafka_dc"),
    (topic_wider_than_the_brokers, "kafka_topics: topic 'orders': replication factor 5 is larger than the 4 brokers"),
    (topic_with_a_bad_name, "kafka_topics: topic #0: 'orders/eu' is not a valid topic name"),
    (
        topics_more_than_the_open_files_hold,
        "dc2-broker1 holds about 4116 replicas, 12348 log segments: it needs 17348 open files (one a segment, "
        "5000 for sockets and the JVM), kafka_node_nofile_limit is 10000",
    ),
    (
        a_max_map_count_below_what_the_segments_need,
        "dc1-broker0 holds about 20116 replicas, 60348 log segments: it needs vm.max_map_count 125696 (two memory "
        "maps a segment, 5000 for the JVM), kafka_node_sysctl sets 65530",
    ),
    (quota_on_an_unknown_entity_type, "kafka_quotas: quota #0: unknown entity type(s) ['ip']"),
    (throttle_without_a_rate, "kafka_quotas: replication throttle rate must be a positive number"),
    (host_in_two_dc_groups, "dc2-broker1 is in the groups of 2 DCs (dc1, dc2): its DC is ambiguous"),
    (dcs_differing_only_in_case, "kafka_dc values differ only in case or spacing: 'DC2' (dc3-controller0); 'dc2'"),
    (
        a_dc_name_with_a_line_break,
        "dc2-broker0: kafka_dc='dc2\\nallow.everyone.if.no.acl.found=true' is not a DC name the roles can write: "
        "use letters, digits, '.', '_' and '-'",
    ),
    (a_dc_name_ending_in_a_line_break, "dc2-broker0: kafka_dc='dc2\\n' is not a DC name the roles can write"),
    (a_dc_name_beyond_ascii, "dc1-broker0: kafka_dc='zürich' is not a DC name the roles can write"),
    (
        an_advertised_address_with_a_line_break,
        "dc2-broker1: its advertised address '10.0.2.11\\nsuper.users=User:x' (kafka_advertised_host, or the "
        "inventory name) is not a host name",
    ),
    (a_super_user_holding_the_separator, "kafka_super_users[0]='ops;User:mallory' cannot go into super.users"),
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
    (
        a_plaintext_client_listener,
        "kafka_listeners.CLIENT uses PLAINTEXT: the client traffic would cross the DC link unencrypted",
    ),
    (scram_between_controllers, "kafka_listeners.CONTROLLER must be SSL (mutual TLS), not SASL_SSL"),
    (scram_clients_but_no_user, "kafka_listeners.CLIENT uses SASL but kafka_users declares no user"),
    (a_canary_user_that_is_not_declared, "kafka_canary_user 'kafka-smoke' is not declared in kafka_users"),
    (
        a_streaming_job_whose_user_is_not_declared,
        "kafka_stream_user 'kafka-stream' is not declared in kafka_users: the streaming job (kafka_stream_topics "
        "['orders']) could not log in",
    ),
    (a_short_password, "kafka_users: user 'kafka-smoke': the password must be a string of at least 8 characters"),
    (an_acl_on_an_unknown_resource, "kafka_acls: ACL #0 (User:etl): resource type 'table' is not one of"),
    (provided_certificates_without_files, "dc1-broker0: kafka_node_tls_key_src='' is not a file"),
    (a_wan_link_without_bandwidth, "kafka_wan_link.bandwidth_mbit must be a positive number, not 0"),
    (a_wan_link_whose_rtt_is_not_a_number, "kafka_wan_link.rtt_ms must be a positive number, not 'thirty'"),
    (a_checksum_of_another_algorithm, "kafka_node_archive_checksum 'md5:"),
    (
        a_checksum_cut_short,
        "dc1-broker0, dc1-broker1, dc1-controller0, dc2-broker0 and 3 more: kafka_node_archive_checksum is not a "
        "sha512 digest: sha512:<128 hex digits>, found 64 characters",
    ),
    (
        a_metrics_agent_without_checksum,
        "dc1-broker0, dc1-broker1, dc1-controller0, dc2-broker0 and 3 more: kafka_node_metrics_agent_checksum is "
        "empty: a download needs its checksum",
    ),
    (
        a_spark_download_without_checksum,
        "dc1-spark: spark_archive_checksum is empty: a download needs its checksum (sha256:<hex> or sha512:<hex>)",
    ),
    (a_spark_worker_with_a_bad_master_url, "dc1-spark: spark_master_url http://m1:8080 is not spark://host:port"),
    (a_spark_cluster_without_a_secret, "dc1-spark: spark_auth_secret is missing or empty: every DC's Spark cluster"),
    (a_spark_cluster_with_an_empty_secret, "dc1-spark: spark_auth_secret is missing or empty"),
    (a_spark_cluster_with_a_short_secret, "dc1-spark: spark_auth_secret is 12 characters long, fewer than 16"),
    (
        a_spark_master_with_the_rest_server_on,
        "dc1-spark: spark_properties sets spark.master.rest.enabled=true: the REST submission server (port 6066) "
        "has no authentication",
    ),
    (
        spark_settings_that_turn_encryption_off,
        "dc1-spark: spark_properties sets spark.network.crypto.enabled, which the roles derive from spark_auth_secret",
    ),
    (two_dcs_sharing_a_spark_secret, "DCs 'dc1' (dc1-spark) and 'dc2' (dc2-spark) share one spark_auth_secret"),
    (
        a_spark_worker_with_another_secret_than_its_master,
        "the Spark hosts of DC 'dc1' hold 2 different spark_auth_secret values (dc1-spark; dc1-spark-worker2)",
    ),
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


@pytest.mark.parametrize(
    "mutate",
    [min_insync_of_one, a_failover_that_relaxes_to_one, a_cluster_wide_target_of_one, a_topic_with_min_insync_of_one],
)
def test_a_min_insync_replicas_of_one_passes_with_the_operators_opt_in(mutate, tmp_path):
    inv = base_inventory()
    mutate(inv)
    inv["all"]["vars"]["kafka_min_insync_replicas_one_opt_in"] = True
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc == 0, out
    assert "inventory accepted" in out
    assert touched_no_host(result)


def test_the_default_archive_url_comes_with_its_checksum(tmp_path):
    inv = base_inventory()
    del inv["all"]["vars"]["kafka_node_archive_url"]
    del inv["all"]["vars"]["kafka_node_archive_checksum"]
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc == 0, out
    assert touched_no_host(result)


def test_an_inventory_with_spark_hosts_passes_without_connecting(tmp_path):
    inv = base_inventory()
    add_spark(inv, spark_archive_checksum=CHECKSUM)
    add_spark(inv, "dc2", spark_archive_src="/srv/spark.tgz")
    add_spark_worker(inv, "dc2-spark-worker2", "dc2", spark_auth_secret=SECRETS["spark-dc2"])
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc == 0, out
    assert {"dc1-spark", "dc2-spark", "dc2-spark-worker2"} <= set(result.recap)
    assert touched_no_host(result)


def test_plaintext_runs_only_by_opt_in_and_preflight_names_it(tmp_path):
    inv = base_inventory()
    listeners(inv, CONTROLLER="PLAINTEXT", REPLICATION="PLAINTEXT", CLIENT="PLAINTEXT")
    inv["all"]["vars"]["kafka_plaintext_opt_in"] = True
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc == 0, out
    for name in ("CLIENT", "CONTROLLER", "REPLICATION"):
        assert f"kafka_listeners.{name} uses PLAINTEXT: its traffic is not encrypted (kafka_plaintext_opt_in" in out
    assert touched_no_host(result)


def test_no_secret_reaches_ansibles_output_even_at_full_verbosity(tmp_path):
    inv = base_inventory()
    add_spark(inv, spark_archive_src="/srv/spark.tgz")
    add_spark(inv, "dc2", spark_archive_src="/srv/spark.tgz")
    rc, out, result = run("preflight.yml", inv, tmp_path, "-vvvv")
    assert rc == 0, out
    everything = json.dumps(result.output) + result.stderr
    # The composed configuration is in the output, so a secret composed into it would be seen.
    assert "ssl.keystore.location" in everything
    # The Spark hosts' secrets were judged, one by one and across the DCs.
    assert "Refuse a Spark host without its cluster's secret" in everything
    assert "Refuse a DC whose Spark hosts hold different secrets, or two DCs sharing one" in everything
    for secret in SECRETS.values():
        assert secret not in everything


# -- provided certificates: real files, judged as Kafka would -------------------------


def make_certificates(directory, hosts, key_format="pkcs8", common_name=None):
    """A CA and, per host, a key and a certificate signed by it (CN the host, unless common_name)."""
    now = datetime.datetime.now(datetime.UTC)

    def certificate(subject, issuer, key, issuer_key, ca):
        return (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .sign(issuer_key, hashes.SHA256())
        )

    ca_key = ec.generate_private_key(ec.SECP256R1())
    (directory / "ca.crt").write_bytes(
        certificate("test CA", "test CA", ca_key, ca_key, True).public_bytes(serialization.Encoding.PEM)
    )
    files = {}
    for host in hosts:
        key = ec.generate_private_key(ec.SECP256R1())
        fmt = serialization.PrivateFormat.PKCS8
        if key_format == "traditional":
            fmt = serialization.PrivateFormat.TraditionalOpenSSL
        encryption = serialization.NoEncryption()
        if key_format == "encrypted":
            encryption = serialization.BestAvailableEncryption(b"key-passphrase")
        (directory / f"{host}.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, fmt, encryption))
        cert = certificate(common_name or host, "test CA", key, ca_key, False)
        (directory / f"{host}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        files[host] = {
            "kafka_node_tls_key_src": str(directory / f"{host}.key"),
            "kafka_node_tls_cert_src": str(directory / f"{host}.crt"),
        }
    for name in ("admin.crt", "admin.key"):
        (directory / name).write_text("placeholder: preflight only checks that it exists\n")
    return files


def provided_inventory(tmp_path, **kwargs):
    inv = base_inventory()
    pki = tmp_path / "pki"
    pki.mkdir()
    hosts = [h for group in ("kafka_controllers", "kafka_brokers") for h in groups(inv)[group]["hosts"]]
    files = make_certificates(pki, hosts, **kwargs)
    for group in ("kafka_controllers", "kafka_brokers"):
        for host, hostvars in groups(inv)[group]["hosts"].items():
            hostvars.update(files[host])
    inv["all"]["vars"].update(
        kafka_tls_certificates="provided", kafka_tls_ca_src=str(pki / "ca.crt"), kafka_tls_pki_dir=str(pki),
    )  # fmt: skip
    return inv


def test_provided_certificates_are_accepted(tmp_path):
    rc, out, result = run("preflight.yml", provided_inventory(tmp_path), tmp_path)
    assert rc == 0, out
    assert touched_no_host(result)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"key_format": "traditional"},
            "dc1-broker0: kafka_node_tls_key_src holds a EC PRIVATE KEY key; Kafka reads only PKCS#8",
        ),
        ({"key_format": "encrypted"}, "dc1-broker0: kafka_node_tls_key_src is encrypted; Kafka on Java 17 cannot"),
        (
            {"common_name": "kafka.example.net"},
            "dc1-broker0: its certificate's CN is 'kafka.example.net' but its principal",
        ),
    ],
    ids=["an EC key in OpenSSL's own format", "an encrypted key", "a CN that is not the principal"],
)
def test_provided_certificates_kafka_would_refuse_are_refused(kwargs, message, tmp_path):
    rc, out, result = run("preflight.yml", provided_inventory(tmp_path, **kwargs), tmp_path)
    assert rc != 0
    assert message in out, out
    assert touched_no_host(result)


def run_shipped(inventory, *extra):
    result = run_playbook(REPO / inventory, "preflight", *extra, timeout=120)
    return result.returncode, result.text + result.stderr


def test_the_testbeds_inventory_passes():
    rc, out = run_shipped("examples/consumer/inventory")
    assert rc == 0, out
    assert "3 controller voters over 3 DCs (1-1-1" in out


def test_the_production_example_passes_with_its_vault(tmp_path):
    # Its topology is 2-2-1 and 3+3, its install source the default release
    # tarball with the checksum Apache publishes for it. Its secrets come from
    # a vault file the operator makes from vault.yml.example; that file's keys
    # stand in for it here.
    example = REPO / "inventories/production/group_vars/kafka/vault.yml.example"
    vault = tmp_path / "vault.yml"
    vault.write_text(example.read_text())
    rc, out = run_shipped("inventories/production", "-e", f"@{vault}")
    assert rc == 0, out
    assert "inventory accepted" in out, out


def test_the_production_example_without_its_vault_names_the_missing_secret():
    rc, out = run_shipped("inventories/production")
    assert rc != 0
    assert "'vault_kafka_" in out, out
    assert "is undefined" in out, out


def test_limit_does_not_hide_a_bad_topology(tmp_path):
    inv = base_inventory()
    controllers_in_two_dcs(inv)
    rc, out, _ = run("preflight.yml", inv, tmp_path, "--limit", "dc1-broker0")
    assert rc != 0
    assert "controllers span 2 DC(s)" in out, out


# -- --limit: no run may skip the cluster-wide plays on the first broker and end ok ----------


def test_a_converge_limited_away_from_the_first_broker_is_refused_before_any_host_is_touched(tmp_path):
    # A release change with the first broker left out: the release guard (on kafka_brokers[0]) would be
    # skipped, and the downgrade installed unguarded, with no restart and no readiness check after it.
    rc, out, result = run(
        "site.yml", base_inventory(), tmp_path, "--limit", "dc2-broker1", "-e", "kafka_node_version=4.2.0"
    )
    assert rc != 0, out
    assert (
        "--limit 'dc2-broker1' leaves out dc1-broker0 (kafka_brokers[0]), where site.yml runs the release guard" in out
    ), out
    assert "Keep dc1-broker0 in the limit (--limit 'dc2-broker1,dc1-broker0'), or run without --limit" in out
    assert touched_no_host(result), "site.yml went on after its scope was refused"


LIMIT_REFUSED = [
    ("site.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where site.yml runs"),
    ("features.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where features.yml runs"),
    ("topics.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where topics.yml runs"),
    ("quotas.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where quotas.yml runs"),
    ("users.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where users.yml runs"),
    ("status.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where status.yml runs"),
    ("smoke_test.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where smoke_test.yml runs"),
    ("monitoring.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where monitoring.yml runs"),
    ("streaming.yml", "leaves out dc1-broker0 (kafka_brokers[0]), where streaming.yml runs"),
    ("rolling_restart.yml", "rolling_restart.yml takes no --limit"),
    ("dc_failover.yml", "dc_failover.yml takes no --limit"),
    ("dc_recovery.yml", "dc_recovery.yml takes no --limit"),
    ("controllers.yml", "controllers.yml takes no --limit"),
    ("brokers.yml", "brokers.yml takes no --limit"),
    ("rotate_certificates.yml", "rotate_certificates.yml takes no --limit"),
]


@pytest.mark.parametrize(("playbook", "message"), LIMIT_REFUSED, ids=[p for p, _ in LIMIT_REFUSED])
def test_every_playbook_refuses_a_limit_that_would_skip_its_cluster_wide_plays(playbook, message, tmp_path):
    rc, out, result = run(playbook, base_inventory(), tmp_path, "--limit", "dc2-broker1")
    assert rc != 0, out
    assert message in out, out
    assert touched_no_host(result), f"{playbook} went on after its scope was refused"


def test_the_streaming_job_limited_to_a_spark_host_alone_is_refused_saying_how_to_limit_it(tmp_path):
    inv = base_inventory()
    add_spark(inv, "dc2", spark_archive_src="/srv/spark.tgz")
    rc, out, result = run("streaming.yml", inv, tmp_path, "--limit", "dc2-spark", "-e", "stream_state=stopped")
    assert rc != 0, out
    assert "--limit 'dc2-spark,kafka_brokers[0]' runs dc2-spark's jobs alone" in out, out
    assert touched_no_host(result), "streaming.yml went on after its scope was refused"


def test_site_stops_before_touching_any_host(tmp_path):
    inv = base_inventory()
    duplicate_node_ids(inv)
    rc, out, result = run("site.yml", inv, tmp_path)
    assert rc != 0
    assert "kafka_node_id 100 is used by more than one host" in out
    assert touched_no_host(result), "site.yml went on after preflight failed"


@pytest.mark.parametrize("playbook", ["site.yml", "spark.yml", "streaming.yml"])
def test_a_converge_without_a_spark_secret_stops_in_preflight_naming_it(playbook, tmp_path):
    inv = base_inventory()
    a_spark_cluster_with_an_empty_secret(inv)
    rc, out, result = run(playbook, inv, tmp_path)
    assert rc != 0
    assert "dc1-spark: spark_auth_secret is missing or empty" in out, out
    assert touched_no_host(result), f"{playbook} went on after preflight failed"


@pytest.mark.parametrize("playbook", ["dc_failover.yml", "dc_recovery.yml"])
@pytest.mark.parametrize("dc", ["dc9", ""])
def test_a_failover_for_a_dc_the_inventory_lacks_touches_no_host(playbook, dc, tmp_path):
    rc, out, result = run(playbook, base_inventory(), tmp_path, "-e", f"kafka_ops_failover_dc={dc}")
    assert rc != 0, out
    assert f"kafka_ops_failover_dc = '{dc}' is not a DC of this inventory" in out, out
    assert "set it to one of ['dc1', 'dc2', 'dc3']" in out
    unreachable = [h for h, s in result.recap.items() if s.get("unreachable")]
    assert not unreachable
    assert not [p for p in result.output["plays"] if p["play"]["name"] == "Take down every node of the DC"]


def unreachable_or_node_plays(result):
    """Hosts that were tried (each points at a closed port), and plays that work on the nodes, that ran."""
    unreachable = [h for h, s in result.recap.items() if s.get("unreachable")]
    plays = [p["play"]["name"] for p in result.output.get("plays", [])]
    return unreachable + [name for name in plays if name.startswith("Install")]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({}, "needs kafka_tls_rotate set to leaves, ca-begin, ca-reissue or ca-finish (it is none)"),
        ({"kafka_tls_rotate": "leaves", "kafka_tls_certificates": "provided"}, "kafka_tls_certificates=provided"),
    ],
    ids=["no-step", "provided-certificates"],
)
def test_a_rotation_without_a_step_or_with_provided_certificates_is_refused(extra, message, tmp_path):
    inv = base_inventory()
    inv["all"]["vars"].update(extra)
    rc, out, result = run("rotate_certificates.yml", inv, tmp_path)
    assert rc != 0, out
    assert message in out, out
    assert not unreachable_or_node_plays(result)


@pytest.mark.parametrize(
    ("phase", "step"),
    [(None, "ca-reissue"), ("begun", "ca-finish"), ("reissued", "ca-begin")],
    ids=["reissue-before-begin", "finish-before-reissue", "begin-during-rotation"],
)
def test_a_ca_rotation_step_out_of_order_is_refused_before_any_node_is_touched(phase, step, tmp_path):
    pki = tmp_path / "pki"
    pki.mkdir(mode=0o700)
    if phase:
        (pki / "rotation").write_text(f"{phase}\n")
    inventory = base_inventory()
    inventory["all"]["vars"]["kafka_tls_pki_dir"] = str(pki)
    rc, out, result = run("rotate_certificates.yml", inventory, tmp_path, "-e", f"kafka_tls_rotate={step}")
    assert rc != 0, out
    assert f"kafka_tls_rotate={step} cannot follow the CA rotation's current step ({phase or 'none'})" in out, out
    assert not unreachable_or_node_plays(result)
    assert not (pki / "next-ca.crt").exists(), "a refused step made a CA"


# -- the Kafka groups have fixed names: a renamed group must not leave every play with no host ----------


def renamed_groups(inv):
    """The controllers and brokers in groups of other names, with the variables that once named them."""
    children = groups(inv)
    children["my_controllers"] = children.pop("kafka_controllers")
    children["my_brokers"] = children.pop("kafka_brokers")
    inv["all"]["vars"].update(kafka_controllers_group="my_controllers", kafka_brokers_group="my_brokers")


@pytest.mark.parametrize("playbook", ["preflight.yml", "site.yml", "topics.yml"])
def test_renamed_kafka_groups_are_refused_not_skipped(playbook, tmp_path):
    # Every play's hosts: pattern names kafka_controllers and kafka_brokers;
    # an inventory that renames them would match no host, and each play would
    # be skipped with the run ending ok.
    inv = base_inventory()
    renamed_groups(inv)
    rc, out, result = run(playbook, inv, tmp_path)
    assert rc != 0, out
    for name in ("kafka_brokers_group", "kafka_controllers_group"):
        assert f"{name} (set for " in out, out
    assert "was removed in stretch.kafka 2.0.0: use the inventory groups kafka_controllers, kafka_brokers" in out
    assert touched_no_host(result), f"{playbook} went on after its scope was refused"


def test_groups_of_other_names_join_through_the_kafka_groups(tmp_path):
    # The way to keep groups of one's own: make them children of the Kafka groups.
    inv = base_inventory()
    children = groups(inv)
    children["my_brokers"] = children.pop("kafka_brokers")
    children["kafka_brokers"] = {"children": {"my_brokers": None}}
    rc, out, result = run("preflight.yml", inv, tmp_path)
    assert rc == 0, out
    assert "inventory accepted" in out


# -- an opt-in is a boolean: an extra var is a string, and "false" must not opt in ----------


@pytest.mark.parametrize("given", ["false", "no", "0", "off"])
@pytest.mark.parametrize(
    ("mutate", "variable", "message"),
    [
        (min_insync_of_one, "kafka_min_insync_replicas_one_opt_in", "kafka_min_insync_replicas=1: an acks=all write"),
        (
            a_topic_with_min_insync_of_one,
            "kafka_min_insync_replicas_one_opt_in",
            "topic 'orders': min.insync.replicas=1",
        ),
        (a_plaintext_client_listener, "kafka_plaintext_opt_in", "kafka_listeners.CLIENT uses PLAINTEXT: the client"),
    ],
    ids=["min-isr-one", "topic-min-isr-one", "plaintext"],
)
def test_an_opt_in_given_as_false_on_the_command_line_does_not_opt_in(mutate, variable, message, given, tmp_path):
    inv = base_inventory()
    mutate(inv)
    rc, out, result = run("preflight.yml", inv, tmp_path, "-e", f"{variable}={given}")
    assert rc != 0, out
    assert message in out, out
    assert touched_no_host(result)


@pytest.mark.parametrize("variable", ["kafka_min_insync_replicas_one_opt_in", "kafka_plaintext_opt_in"])
def test_an_opt_in_that_is_not_a_boolean_is_refused_naming_it(variable, tmp_path):
    # The roles' argument specs refuse it first; the checks in Python refuse it too (tests/unit/test_flags.py).
    rc, out, result = run("preflight.yml", base_inventory(), tmp_path, "-e", f"{variable}=maybe")
    assert rc != 0, out
    assert f"argument '{variable}' is of type str and we were unable to convert to bool" in out, out
    assert touched_no_host(result)
