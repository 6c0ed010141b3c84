"""The admin adapter's reads fail closed: a partition, a resource or an answer the cluster left out is an error."""

import pytest
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin.configs import DescribeConfigsResponse

from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import Admin, AdminError

LEADER_NOT_AVAILABLE = 5
UNKNOWN_TOPIC_OR_PARTITION = 3
DYNAMIC_TOPIC_CONFIG = 1
TOPIC = 2
Result = DescribeConfigsResponse.DescribeConfigsResult
Config = Result.DescribeConfigsResourceResult


def partition(index, leader, replicas, error_code=0):
    return {
        "partition_index": index,
        "leader_id": leader,
        "replica_nodes": replicas,
        "isr_nodes": replicas,
        "error_code": error_code,
    }


class FakeClient:
    """kafka-python's admin client as far as the adapter uses it; records elections.

    Configs are described from the same raw DescribeConfigs answers the
    adapter's own requests get (describing()), through kafka-python's own
    processing of them.
    """

    def __init__(self, topics=(), elected=None, altered=None, send=None):
        self._topics = list(topics)
        self._elected = elected
        self._altered = altered
        self._send = send
        self.elections = []

    def describe_topics(self):
        return self._topics

    def elect_leaders(self, election_type, by_topic, timeout_ms, raise_errors):
        self.elections.append(by_topic)
        return self._elected(by_topic)

    def alter_configs(self, resources, validate_only, raise_on_unknown):
        return self._altered(resources)

    def describe_configs(self, resources, config_filter="modified"):
        response = self._send(KafkaAdminClient._describe_configs_request(resources))
        return KafkaAdminClient._describe_configs_process_responses([response], config_filter)


def admin_over(client):
    admin = Admin("b1:9092")
    admin._client = client
    if client._send is not None:
        admin._send = client._send
    return admin


def topic(name, *partitions):
    return {"name": name, "error_code": 0, "is_internal": False, "partitions": list(partitions)}


def test_a_partition_that_could_not_be_described_is_not_taken_for_a_preferred_one():
    client = FakeClient([topic("orders", partition(0, -1, [101, 201], LEADER_NOT_AVAILABLE), partition(1, 201, [201]))])
    with pytest.raises(AdminError, match="orders-0"):
        admin_over(client).not_preferred()


def test_the_election_fails_when_a_partition_it_asked_for_has_no_answer():
    client = FakeClient(
        [topic("orders", partition(0, 201, [101, 201]), partition(1, 101, [201, 101]))],
        elected=lambda by_topic: {
            "replica_election_results": [
                {"topic": "orders", "partition_result": [{"partition_id": 0, "error_code": 0, "error_message": None}]}
            ]
        },
    )
    moved, failed = admin_over(client).elect_preferred_everywhere()
    assert moved == ["orders-0", "orders-1"]
    assert failed == ["orders-1: the cluster did not answer for it"]


def test_topics_fail_on_a_partition_the_cluster_could_not_describe():
    client = FakeClient([topic("orders", partition(0, 101, [101]), partition(1, -1, [201], LEADER_NOT_AVAILABLE))])
    with pytest.raises(AdminError, match="orders-1"):
        admin_over(client).topics()


def config(name, value, source=DYNAMIC_TOPIC_CONFIG):
    return Config(name=name, value=value, read_only=False, config_source=source, is_sensitive=False, synonyms=[],
                  config_type=0, documentation=None)  # fmt: skip


def describing(answers):
    """A raw-request sender answering DescribeConfigs from {resource name: [configs], or an error code}."""

    def send(request, node_id=None):
        results = []
        for _, name, _ in request.resources:
            if name not in answers:
                continue
            answer = answers[name]
            failed = isinstance(answer, int)
            results.append(
                Result(
                    error_code=answer if failed else 0,
                    error_message="gone" if failed else None,
                    resource_type=TOPIC,
                    resource_name=name,
                    configs=[] if failed else answer,
                )  # fmt: skip
            )
        return DescribeConfigsResponse(throttle_time_ms=0, results=results)

    return send


def test_topic_configs_read_only_what_is_set_on_the_topic():
    send = describing({"orders": [config("retention.ms", "1000"), config("cleanup.policy", "delete", 5)]})
    assert admin_over(FakeClient(send=send)).topic_configs(["orders"]) == {"orders": {"retention.ms": "1000"}}


def test_configs_the_cluster_could_not_describe_are_an_error_not_an_empty_set():
    send = describing({"orders": [config("retention.ms", "1000")], "payments": UNKNOWN_TOPIC_OR_PARTITION})
    with pytest.raises(AdminError, match="topic payments: gone"):
        admin_over(FakeClient(send=send)).topic_configs(["orders", "payments"])


def test_configs_missing_from_the_reply_are_an_error_not_an_empty_set():
    send = describing({"orders": [config("leader.replication.throttled.replicas", "*")]})
    with pytest.raises(AdminError, match="topic payments: the cluster did not answer for it"):
        admin_over(FakeClient(send=send)).topic_configs(["orders", "payments"])


def test_a_config_change_without_an_answer_for_a_resource_is_an_error():
    client = FakeClient(altered=lambda resources: {"topic": {"orders": "OK"}})
    change = {"set": {"retention.ms": "1000"}, "delete": []}
    errors = admin_over(client).alter_configs("topic", {"orders": change, "payments": change})
    assert errors == {"payments": "the cluster did not answer for it"}


def test_a_broker_config_change_the_cluster_refuses_is_named_by_the_broker_id_it_was_asked_for():
    client = FakeClient(
        altered=lambda resources: {"broker": {"101": "OK", "202": "[Error 29] ClusterAuthorizationFailedError: no"}}
    )
    change = {"set": {"leader.replication.throttled.rate": "1000"}, "delete": []}
    assert admin_over(client).alter_configs("broker", {101: change, 202: change}) == {202: "no"}


# -- which brokers answer: a frozen host is passed over, not waited on ----------


@pytest.fixture
def tls_listener(tmp_path):
    """A TLS server on loopback that completes handshakes (a live broker); yields its address."""
    import datetime
    import socket
    import ssl
    import threading

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(10)

    def serve():
        for _ in range(4):
            try:
                conn, _ = server.accept()
            except OSError:
                return
            try:
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (OSError, ssl.SSLError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


@pytest.fixture
def frozen_listener():
    """A listening socket nothing accepts from: the kernel completes the TCP handshake, no process answers."""
    import socket

    server = socket.create_server(("127.0.0.1", 0), backlog=8)
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def closed_port():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{sock.getsockname()[1]}"


def test_a_broker_that_accepts_connections_but_sends_no_tls_reply_is_passed_over(tls_listener, frozen_listener):
    from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import answering

    dead = closed_port()
    live, silent = answering([frozen_listener, tls_listener, dead], {"security_protocol": "SSL"}, timeout=1)
    assert live == [tls_listener]
    assert silent == [frozen_listener, dead]


def test_without_tls_a_connection_that_is_accepted_is_an_answer(frozen_listener):
    from ansible_collections.stretch.kafka.plugins.module_utils.kafka_admin import answering

    dead = closed_port()
    assert answering([frozen_listener, dead], {}, timeout=1) == ([frozen_listener], [dead])


def test_when_no_broker_answers_the_admin_fails_naming_them_instead_of_waiting(frozen_listener):
    admin = Admin(frozen_listener, {"security_protocol": "SSL"})
    with pytest.raises(AdminError, match=f"no broker answered: {frozen_listener}: no connection or no TLS reply"):
        admin.client  # noqa: B018  connecting is what is tested


def test_finalized_features_read_kafka_pythons_answer_and_leave_out_what_is_only_supported():
    # kafka-python's describe_features() (its _async_describe_features) answers per feature, not under a
    # "finalized_features" key as its docstring says.
    class Features:
        def describe_features(self):
            return {
                "metadata.version": {"supported": (7, 29), "finalized": (29, 29), "finalized_epoch": 4},
                "eligible.leader.replicas.version": {"supported": (0, 1), "finalized": (1, 1), "finalized_epoch": 4},
                "share.version": {"supported": (0, 1)},
            }

    admin = Admin("b1:9092")
    admin._client = Features()
    assert admin.finalized_features() == {"eligible.leader.replicas.version": 1, "metadata.version": 29}


def test_a_broker_whose_name_does_not_resolve_is_named_as_such_not_as_silent(frozen_listener):
    admin = Admin(f"no-such-broker.invalid:9092,{frozen_listener}", {"security_protocol": "SSL"})
    with pytest.raises(AdminError) as refused:
        admin.client  # noqa: B018  connecting is what is tested
    assert "no-such-broker.invalid:9092: the host name does not resolve" in str(refused.value)
    assert f"{frozen_listener}: no connection or no TLS reply" in str(refused.value)
    assert "no-such-broker.invalid:9092, " not in str(refused.value)
