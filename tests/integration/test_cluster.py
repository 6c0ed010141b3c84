"""Checks the deployed cluster against the inventory: services, quorum, brokers, data path.

Runs against a converged cluster (Molecule's verify step, or `make verify`).
"""

import uuid
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from ansible_collections.stretch.kafka.plugins.module_utils import health

from .conftest import create_topic, wait_until

MESSAGES = 500


def kafka_cli(host, command, *args):
    """Run a Kafka tool on a node, connecting with the settings the playbooks use.

    command is the tool and, for tools that have them, its subcommand
    ("kafka-cluster list-endpoints"): the connection options follow it.
    """
    return host.run(" ".join([command, "--command-config", "/etc/kafka/client.properties", *args]))


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
            assert props["broker.rack"] == node.rack
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


def test_quorum_has_a_leader_and_caught_up_voters_in_three_dcs(cluster, hosts):
    controller = hosts[cluster.controllers[0].host]
    voter_dcs = {n.node_id: n.rack for n in cluster.controllers}

    def problems():
        status = kafka_cli(
            controller,
            "kafka-metadata-quorum",
            "--bootstrap-controller",
            cluster.bootstrap_controllers,
            "describe",
            "--status",
        )
        replication = kafka_cli(
            controller,
            "kafka-metadata-quorum",
            "--bootstrap-controller",
            cluster.bootstrap_controllers,
            "describe",
            "--replication",
        )
        if status.rc or replication.rc:
            return [status.stderr + replication.stderr]
        s = health.parse_quorum_status(status.stdout)
        r = health.parse_quorum_replication(replication.stdout)
        return health.quorum_problems(s, r, voter_dcs, max_lag=5)

    found = wait_until(lambda: not problems(), timeout=90)
    assert found, problems()
    assert len(set(voter_dcs.values())) == 3


def test_every_broker_is_registered_unfenced_in_its_rack(cluster, hosts):
    broker = hosts[cluster.brokers[0].host]
    racks = {n.node_id: n.rack for n in cluster.brokers}
    out = kafka_cli(
        broker,
        "kafka-cluster list-endpoints",
        "--bootstrap-server",
        cluster.bootstrap_servers,
        "--include-fenced-brokers",
    )
    assert out.rc == 0, out.stderr
    assert health.broker_problems(health.parse_endpoints(out.stdout), racks) == []


@pytest.fixture
def rf4_topic(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
    name = f"verify-roundtrip-{uuid.uuid4().hex[:8]}"
    metadata = create_topic(admin, name, partitions=4, replication_factor=4)
    yield name, metadata
    admin.delete_topics([name])[name].result(timeout=60)


def test_round_trip_with_acks_all_on_rf4_topic_returns_every_message(cluster, rf4_topic):
    topic, metadata = rf4_topic
    racks = {n.node_id: n.rack for n in cluster.brokers}
    assert len(metadata.partitions) == 4
    for partition in metadata.partitions.values():
        per_dc = Counter(racks[r] for r in partition.replicas)
        assert per_dc == dict.fromkeys(set(racks.values()), 2), f"partition {partition.id}: {partition.replicas}"

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
