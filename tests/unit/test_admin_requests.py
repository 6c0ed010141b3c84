"""What the admin modules ask of Kafka as the cluster grows: requests and the size of their replies, counted.

A fake of kafka-python's admin client stands for a cluster of T topics of P
partitions each on B brokers. It records each request as kafka-python sends
it for the method called (kafka/admin/*.py: describe_topics is one Metadata
request, describe_configs one DescribeConfigs per broker resource and one for
all the others, describe_topic_partitions one page of up to 2,000
partitions), with what grows in it: the topic names sent, the partitions and
config entries answered. The adapter's raw requests (Admin._send) are counted
as they are sent. The counter the modules report (RequestCounter) is held to
kafka-python's own connection code.
"""

import logging
import math

import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.configs import DescribeConfigsResponse

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, topics
from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import Admin, RequestCounter
from ansible_collections.stretch.kafka.plugins.module_utils.quotas import REPLICA_KEYS
from ansible_collections.stretch.kafka.plugins.modules import kafka_gate, kafka_quotas

Result = DescribeConfigsResponse.DescribeConfigsResult
Config = Result.DescribeConfigsResourceResult
# Kafka 4's topic configs: a reply that asks for every key carries all of them for each topic.
TOPIC_CONFIG_KEYS = [f"config.{i}" for i in range(38)] + ["min.insync.replicas", *REPLICA_KEYS]
DEFAULT_CONFIG, DYNAMIC_TOPIC_CONFIG = 5, 1
PAGE = 2000  # DescribeTopicPartitions' partitions per reply (the brokers' max.request.partition.size.limit)
BROKERS = [{"node_id": b, "dc": dc} for b, dc in ((101, "dc1"), (102, "dc1"), (201, "dc2"), (202, "dc2"))]


class FakeKafka:
    """kafka-python's KafkaAdminClient over a cluster of `topics` topics of `partitions` partitions each."""

    def __init__(self, topics=10, partitions=12, brokers=BROKERS, leaders=(2, 3)):
        self.names = [f"t{i:05d}" for i in range(topics)]
        self.partitions = partitions
        self.brokers = brokers
        self.sent = []  # (API, {what grows in the request or its reply})

    def _topic(self, name):
        ids = [b["node_id"] for b in self.brokers]
        parts = [
            {"partition_index": p, "leader_id": ids[p % len(ids)], "replica_nodes": ids, "isr_nodes": ids,
             "error_code": 0, "eligible_leader_replicas": None, "last_known_elr": None}
            for p in range(self.partitions)
        ]  # fmt: skip
        return {"name": name, "error_code": 0, "is_internal": False, "partitions": parts}

    # -- kafka-python's methods, each recorded as the requests it sends -------------
    def describe_cluster(self):
        self.sent.append(("DescribeCluster", {}))
        brokers = [{"broker_id": b["node_id"], "rack": b["dc"], "is_fenced": False} for b in self.brokers]
        return {"cluster_id": "fake", "brokers": brokers}

    def describe_topics(self, topics=None):
        names = self.names if topics is None else list(topics)
        self.sent.append(("Metadata", {"topics_named": len(topics or ()), "partitions": len(names) * self.partitions}))
        return [self._topic(n) for n in names]

    def list_topics(self):
        return [t["name"] for t in self.describe_topics()]

    def list_partition_reassignments(self, timeout_ms=None):
        self.sent.append(("ListPartitionReassignments", {}))
        return {}

    def describe_features(self):
        self.sent.append(("ApiVersions", {}))
        return {"metadata.version": {"supported": (7, 29), "finalized": (29, 29)}}

    def describe_topic_partitions(self, topics, response_partition_limit=PAGE, cursor=None):
        names = list(topics) or self.names  # an empty list asks for every topic (KIP-966)
        every = [(n, p) for n in names for p in range(self.partitions)]
        start = every.index((cursor["topic_name"], cursor["partition_index"])) if cursor else 0
        page = every[start : start + response_partition_limit]
        self.sent.append(("DescribeTopicPartitions", {"topics_named": len(topics), "partitions": len(page)}))
        by_topic = {}
        for name, p in page:
            by_topic.setdefault(name, {**self._topic(name), "partitions": []})["partitions"].append(
                self._topic(name)["partitions"][p]
            )
        rest = every[start + response_partition_limit :]
        cursor = {"topic_name": rest[0][0], "partition_index": rest[0][1]} if rest else None
        return {"topics": list(by_topic.values()), "next_cursor": cursor}

    def describe_configs(self, resources, config_filter="modified"):
        by_broker, others = KafkaAdminClient._group_config_resources(resources)
        batches = [[r] for rs in by_broker.values() for r in rs] + ([others] if others else [])
        responses = [self.answer(KafkaAdminClient._describe_configs_request(batch)) for batch in batches]
        return KafkaAdminClient._describe_configs_process_responses(responses, config_filter)

    # -- the adapter's raw requests (Admin._send) ----------------------------------
    def answer(self, request, node_id=None):
        name = type(request).__name__.removesuffix("Request")
        if name != "DescribeConfigs":
            self.sent.append((name, {}))
            return type(request).__name__  # nothing reads it in these tests
        results, entries = [], 0
        for kind, resource, keys in request.resources:
            configs = [
                Config(name=k, value="2" if k == "min.insync.replicas" else "x", read_only=False,
                       config_source=DEFAULT_CONFIG, is_sensitive=False, synonyms=[], config_type=0,
                       documentation=None)
                for k in (keys if keys is not None else TOPIC_CONFIG_KEYS)
            ]  # fmt: skip
            entries += len(configs)
            results.append(
                Result(error_code=0, error_message=None, resource_type=kind, resource_name=resource, configs=configs)
            )
        self.sent.append(("DescribeConfigs", {"resources": len(results), "entries": entries}))
        return DescribeConfigsResponse(throttle_time_ms=0, results=results)

    def requests(self):
        return [api for api, _ in self.sent]

    def grown(self, what):
        return sum(detail.get(what, 0) for _, detail in self.sent)


def admin_over(fake):
    admin = Admin("b1:9092")
    admin._client = fake
    admin._send = fake.answer
    return admin


# -- the counter the modules report: kafka-python's own record of each request -------
def written(*requests):
    """Each request written through a real kafka-python connection (its _send_request), as an admin call does."""
    from kafka.net.connection import KafkaConnection
    from kafka.protocol.broker_version_data import BrokerVersionData
    from kafka.protocol.parser import KafkaProtocol

    class Net:
        def call_at(self, *args):
            return None

    class Transport:
        def write(self, data):
            pass

        def host_port(self):
            return "b1:9092"

    connection = KafkaConnection(Net(), node_id=1, broker_version_data=BrokerVersionData((4, 0)))
    connection.parser, connection.transport = KafkaProtocol(client_id="test"), Transport()
    connection.connected, connection.initializing = True, False
    for request in requests:
        connection.send_request(request)


def test_the_counter_counts_by_api_each_request_kafka_python_writes_while_it_is_attached():
    from kafka.protocol.admin.configs import DescribeConfigsRequest
    from kafka.protocol.metadata import MetadataRequest

    logger = logging.getLogger(kafka_admin.REQUEST_LOGGER)
    level = logger.level
    counter = RequestCounter()
    written(MetadataRequest(topics=[]))  # before it counts
    counter.attach()
    written(MetadataRequest(topics=[]), MetadataRequest(topics=None), DescribeConfigsRequest(resources=[]))
    counter.detach()
    written(MetadataRequest(topics=[]))  # after
    assert counter.summary() == {"total": 3, "by_api": {"DescribeConfigs": 1, "Metadata": 2}}
    assert logger.level == level
    assert counter not in logger.filters


def test_counting_hands_no_handler_a_record_the_logger_did_not_let_through_before():
    from kafka.protocol.metadata import MetadataRequest

    seen = []

    class Seen(logging.Handler):
        def emit(self, record):
            seen.append(record.levelno)

    root, handler = logging.getLogger(), Seen(logging.DEBUG)
    root.addHandler(handler)
    counter = RequestCounter().attach()
    try:
        written(MetadataRequest(topics=[]))
        logging.getLogger(kafka_admin.REQUEST_LOGGER).warning("a warning still goes through")
    finally:
        counter.detach()
        root.removeHandler(handler)
    assert counter.summary()["total"] == 1
    assert seen == [logging.WARNING]


def test_an_admin_counts_from_its_first_connection_and_stops_when_closed(monkeypatch):
    admin = Admin("b1:9092")
    from kafka.protocol.metadata import MetadataRequest

    written(MetadataRequest(topics=[]))  # before it connects
    monkeypatch.setattr(kafka_admin, "live_bootstrap", lambda servers, config, what="broker": [])
    admin._connect()  # connecting attaches the counter (no broker answers here: no client is made)

    written(MetadataRequest(topics=[]))
    admin.close()
    written(MetadataRequest(topics=[]))
    assert admin.requests.summary() == {"total": 1, "by_api": {"Metadata": 1}}


# -- the converge's reads: requests that do not grow with the topics -----------------
@pytest.mark.parametrize("count", [10, 1000])
def test_a_no_op_topics_run_sends_the_same_requests_whatever_the_number_of_topics(count):
    fake = FakeKafka(topics=count, partitions=4)
    declared = topics.normalize([{"name": n, "partitions": 4} for n in fake.names], 4)
    current = fake.describe_topics()
    fake.sent.clear()

    class Placed(FakeKafka):
        def _topic(self, name):  # the declared placement, so that nothing is to change
            return {**current[0], "name": name, "partitions": placed}

    layout = topics.placement.place({"dc1": [101, 102], "dc2": [201, 202]}, 4, 4)
    placed = [{**current[0]["partitions"][p], "replica_nodes": layout[p]} for p in range(4)]
    fake.__class__ = Placed
    result = topics.reconcile(admin_over(fake), declared, BROKERS, {"remove_undeclared": False,
                              "internal_topics": False, "throttle_rate": 1, "reassignment_timeout": 1})  # fmt: skip
    assert not result["changed"]
    assert fake.requests() == ["DescribeCluster", "ListPartitionReassignments", "Metadata", "DescribeConfigs"]


# -- a gate's poll: the topics' min.insync.replicas, one config each -------------------
@pytest.mark.parametrize("count", [10, 500])
def test_a_gates_poll_asks_each_topic_for_its_min_insync_replicas_alone(count):
    fake = FakeKafka(topics=count, partitions=3)
    snapshot = admin_over(fake).snapshot(("brokers", "partitions"))
    assert snapshot["errors"] == []
    assert snapshot["min_isr"] == dict.fromkeys(fake.names, 2)
    assert fake.requests() == ["DescribeCluster", "Metadata", "DescribeConfigs"]
    # One config entry a topic comes back, not the forty-odd each topic has.
    assert fake.grown("entries") == count


# -- status: the eligible leader replicas, without the topics' names ------------------
@pytest.mark.parametrize(("count", "partitions"), [(10, 12), (400, 12)])
def test_status_reads_every_partitions_eligible_leaders_page_by_page_without_naming_the_topics(count, partitions):
    fake = FakeKafka(topics=count, partitions=partitions)
    features, eligible = kafka_gate.eligibility(admin_over(fake))
    assert features == {"metadata.version": 29}
    assert len(eligible) == count * partitions
    pages = math.ceil(count * partitions / PAGE)
    assert fake.requests() == ["ApiVersions"] + ["DescribeTopicPartitions"] * pages
    assert fake.grown("topics_named") == 0


# -- the replication throttle: two configs of each topic ----------------------------
def test_the_throttles_check_asks_each_topic_for_the_two_replica_lists_alone():
    fake = FakeKafka(topics=300, partitions=2)
    changes = kafka_quotas.throttle_changes(admin_over(fake), {"state": "absent", "rate": 1000})
    assert changes["topics"] == {}
    topic_reads = [d for api, d in fake.sent if api == "DescribeConfigs" and d["resources"] == 300]
    assert topic_reads == [{"resources": 300, "entries": 300 * len(REPLICA_KEYS)}]
    # The brokers' own rates: one request per broker, as Kafka answers a broker's configs only from that broker.
    assert fake.requests().count("DescribeConfigs") == len(BROKERS) + 2


# -- the quorum: a poll asks the controller that led at the last one ------------------
class Controllers:
    """kafka-python's connection layer over three controllers, of which the last listed leads; records who is
    asked. The addresses come back in the order given, leader last (kafka-python shuffles them)."""

    def __init__(self, leader):
        self.leader, self.asked = leader, []
        outer = self

        class Node:
            def __init__(self, address):
                self.host, port = address.rsplit(":", 1)
                self.port, self.node_id = int(port), address

        class Reply:
            def __init__(self, address):
                self.error_code, self.error_message = 0, None
                self.leads = address == outer.leader

            def to_dict(self):
                state = {"error_code": 0 if self.leads else 6, "error_message": None, "leader_id": 3,
                         "leader_epoch": 1, "high_watermark": 10, "current_voters": [], "observers": []}  # fmt: skip
                return {"topics": [{"partitions": [state]}]}

        class Manager:
            def __init__(self, addresses):
                self.cluster = type("Cluster", (), {"bootstrap_brokers": lambda _: [Node(a) for a in addresses]})()
                self._net = type("Net", (), {"start": lambda _: None})()

            def run(self, ask, node_id):
                outer.asked.append(node_id)
                return Reply(node_id)

        class NetClient:
            def __init__(self, bootstrap_servers, **config):
                self._manager = Manager(bootstrap_servers)

            def close(self):
                pass

        self.NetClient = NetClient


def test_each_poll_of_the_quorum_asks_first_the_controller_that_led_at_the_last(monkeypatch):
    controllers = ["c1:9093", "c2:9093", "c3:9093"]
    fake = Controllers(leader="c3:9093")
    monkeypatch.setattr(kafka_admin, "KafkaNetClient", fake.NetClient)
    monkeypatch.setattr(kafka_admin, "live_bootstrap", lambda servers, config, what="broker": list(servers))
    admin = Admin("", bootstrap_controllers=",".join(controllers))
    assert admin.quorum()["leader"] == 3
    assert fake.asked == controllers  # the first read knows no leader: each in turn until it answers
    fake.asked.clear()
    admin.quorum()
    admin.quorum()
    assert fake.asked == ["c3:9093", "c3:9093"]
    admin.close()
