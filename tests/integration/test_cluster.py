"""Checks the deployed cluster against the inventory: services, quorum, brokers, data path.

Runs against a converged cluster (Molecule's verify step, or `make verify`).
"""

import ipaddress
import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient

from testkit.cluster import create_topic, wait_until

MESSAGES = 500


def test_every_node_runs_enabled_under_systemd(cluster, hosts):
    for node in cluster.nodes:
        service = hosts[node.host].service("kafka")
        assert service.is_running, f"{node.host}: kafka is not running"
        assert service.is_enabled, f"{node.host}: kafka is not enabled"


def test_process_roles_are_separate_and_brokers_carry_their_dc(cluster, hosts):
    for node in cluster.nodes:
        props = dict(
            line.split("=", 1)
            for line in hosts[node.host].file("/etc/kafka/server.properties").content_string.splitlines()
            if line and not line.startswith("#")
        )
        assert props["process.roles"] == ",".join(node.roles)
        if "broker" in node.roles:
            assert props["broker.rack"] == node.dc
            assert props["replica.selector.class"] == "org.apache.kafka.common.replica.RackAwareReplicaSelector"
            assert props["default.replication.factor"] == "4"
        else:
            assert "broker.rack" not in props


def test_every_node_belongs_to_the_same_cluster(cluster, hosts):
    ids = {}
    for node in cluster.nodes:
        meta = hosts[node.host].file("/var/lib/kafka/metadata/meta.properties").content_string
        ids[node.host] = dict(line.split("=", 1) for line in meta.splitlines() if "=" in line)["cluster.id"]
    assert len(set(ids.values())) == 1, ids


def dc_of_address(cluster, address):
    """The DC whose testbed network holds the address (each DC is its own podman network)."""
    for node in cluster.nodes:
        if node.network and ipaddress.ip_address(address) in ipaddress.ip_network(node.network):
            return node.dc
    return None


def test_quorum_has_a_leader_and_caught_up_voters_in_three_dcs(cluster):
    # Read with kafka-python's own DescribeQuorum through a broker, not with the
    # roles' controller client; the voters' DCs come from where the cluster
    # says they are (their endpoints), not from the inventory.
    def quorum():
        admin = KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)
        try:
            return admin.describe_metadata_quorum()
        finally:
            admin.close()

    def settled():
        state = quorum()["topics"][0]["partitions"][0]
        voters = {v["replica_id"]: v["log_end_offset"] for v in state["current_voters"]}
        end = voters.get(state["leader_id"])
        return state if end is not None and all(end - leo <= 5 for leo in voters.values()) else None

    state = wait_until(settled, timeout=90)
    assert state, quorum()
    voters = sorted(v["replica_id"] for v in state["current_voters"])
    assert voters == sorted(n.node_id for n in cluster.controllers)
    endpoints = {n["node_id"]: n["listeners"][0]["host"] for n in quorum()["nodes"]}
    voter_dcs = {voter: dc_of_address(cluster, endpoints[voter]) for voter in voters}
    assert None not in voter_dcs.values(), voter_dcs
    assert set(voter_dcs.values()) == set(cluster.controller_dcs), voter_dcs
    assert len(cluster.controller_dcs) >= 3, cluster.controller_dcs


def test_every_broker_is_registered_unfenced_in_its_dc(cluster):
    # describe_cluster lists the registered, unfenced brokers with the rack each one published.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
    described = admin.describe_cluster(request_timeout=30).result(timeout=30)
    assert {n.id: n.rack for n in described.nodes} == {n.node_id: n.dc for n in cluster.brokers}


@pytest.fixture
def rf4_topic(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
    name = f"verify-roundtrip-{uuid.uuid4().hex[:8]}"
    metadata = create_topic(admin, name, partitions=4, replication_factor=4)
    yield name, metadata
    admin.delete_topics([name])[name].result(timeout=60)


def test_round_trip_with_acks_all_on_rf4_topic_returns_every_message(cluster, rf4_topic):
    topic, metadata = rf4_topic
    dcs = {n.node_id: n.dc for n in cluster.brokers}
    assert len(metadata.partitions) == 4
    for partition in metadata.partitions.values():
        per_dc = Counter(dcs[r] for r in partition.replicas)
        assert per_dc == dict.fromkeys(cluster.dcs, 2), f"partition {partition.id}: {partition.replicas}"

    acked, errors = [], []

    def on_delivery(err, msg):
        (errors if err else acked).append(err or msg.value())

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            **cluster.client_config,
        }
    )
    sent = {f"message-{i}".encode() for i in range(MESSAGES)}
    for value in sorted(sent):
        producer.produce(topic, value=value, on_delivery=on_delivery)
    assert producer.flush(60) == 0
    assert errors == []
    assert set(acked) == sent

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "group.id": f"{topic}-reader",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **cluster.client_config,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.partitions])
    received, told = [], []

    def read_batch():
        for message in consumer.consume(500, timeout=2):
            if message.error():
                told.append(str(message.error()))
            else:
                received.append(message.value())
        return len(received) >= MESSAGES

    try:
        wait_until(read_batch, timeout=60, interval=0)
    except KafkaException as exc:
        pytest.fail(f"consume failed: {exc}; the consumer was told before: {told[-5:]}")
    finally:
        consumer.close()
    assert sorted(received) == sorted(sent), f"read {len(received)} of {MESSAGES}; the consumer was told: {told[-5:]}"
