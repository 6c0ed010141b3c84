"""What the secured cluster refuses, each with the error it refuses with.

TLS is checked with Python's own ssl module on raw sockets, so each case
sees the exact alert or verification error; SCRAM and the ACLs with
confluent-kafka, as a client would meet them. Every refusal has a control
beside it that passes with the right credential, so a refusal cannot come
from a listener that is simply down.
"""

from __future__ import annotations

import datetime
import json
import socket
import ssl
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from testkit.cluster import playbook, wait_until
from testkit.leaks import leaks
from testkit.tls import context, exchange, tls_exchange

NOBODY = "it-nobody"  # an authenticated user with no ACL at all
TOPIC = "load"  # a declared topic the load user may use, and nobody else


def make_certificate(directory, name, common_name, issuer=None, days=(-1, 30), san=None):
    """A key and a certificate in directory: self-signed as a CA when issuer is None, else signed by issuer."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    signer_cert, signer_key = (None, key) if issuer is None else issuer
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject if signer_cert is None else signer_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + datetime.timedelta(days=days[0]))
        .not_valid_after(now + datetime.timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=issuer is None, path_length=None), critical=True)
    )
    if san:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in san]), critical=False)
    cert = builder.sign(signer_key, hashes.SHA256())
    cert_path, key_path = Path(directory) / f"{name}.crt", Path(directory) / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.touch(mode=0o600)
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert, key, cert_path, key_path


@pytest.fixture(scope="module")
def pki(cluster, tmp_path_factory):
    """The cluster's CA files, a client certificate of a foreign CA, and an expired one of the cluster's CA."""
    directory = tmp_path_factory.mktemp("pki")
    own = Path(cluster.admin_config["ssl_cafile"]).parent
    ca_cert = x509.load_pem_x509_certificate((own / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((own / "ca.key").read_bytes(), password=None)
    foreign = make_certificate(directory, "foreign-ca", "another CA")
    principal = cluster.brokers[0].host  # a super user's name: only the certificate's validity stands in the way
    return {
        "trusted": own / "trusted.pem",
        "admin": (own / "admin.crt", own / "admin.key"),
        "foreign_ca": foreign[2],
        "foreign": make_certificate(directory, "foreign", principal, issuer=foreign[:2])[2:],
        "expired": make_certificate(directory, "expired", principal, issuer=(ca_cert, ca_key), days=(-30, -1))[2:],
        # The same name from the cluster's CA, in its validity: what the two above differ from.
        "valid": make_certificate(directory, "valid", principal, issuer=(ca_cert, ca_key))[2:],
    }


def node_listeners(cluster):
    """(label, address, port) of a mutual-TLS listener of each kind: the controller and the replication listener."""
    return [
        ("controller", cluster.controllers[0].address, cluster.controller_port),
        ("replication", cluster.brokers[0].address, cluster.admin_port),
    ]


def test_every_listener_refuses_a_plaintext_client(cluster):
    """Plaintext bytes to a TLS port get no Kafka answer: the listener drops the connection."""
    listeners = [("client", cluster.brokers[0].address, cluster.client_port), *node_listeners(cluster)]
    for label, address, port in listeners:
        with socket.create_connection((address, port), timeout=15) as sock:
            try:
                answer = exchange(sock)
            except ConnectionResetError:
                answer = None
        assert answer is None, f"the {label} listener {address}:{port} answered a plaintext request"


def test_client_listener_speaks_tls_with_the_cluster_ca(cluster, pki):
    # The control for the refusals: the same request over TLS is answered.
    broker = cluster.brokers[0]
    assert tls_exchange(broker.address, cluster.client_port, context(pki["trusted"])) == 7


@pytest.mark.parametrize("index", [0, 1], ids=["controller", "replication"])
def test_node_listeners_refuse_a_client_without_a_certificate(cluster, pki, index):
    label, address, port = node_listeners(cluster)[index]
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_REQUIRED"):
        tls_exchange(address, port, context(pki["trusted"]))
    # With the admin's certificate, the same listener answers.
    assert tls_exchange(address, port, context(pki["trusted"], *pki["admin"])) == 7


@pytest.mark.parametrize("index", [0, 1], ids=["controller", "replication"])
@pytest.mark.parametrize("which", ["foreign", "expired"])
def test_node_listeners_refuse_a_certificate_of_another_ca_or_expired(cluster, pki, index, which):
    """Java answers both with the certificate_unknown alert; the control shows the CA or the dates decide it.

    The refused certificate and the accepted one carry the same name, a node's
    (a super user): one is signed by another CA or has expired, the other is
    signed by the cluster's CA and valid today.
    """
    label, address, port = node_listeners(cluster)[index]
    with pytest.raises(ssl.SSLError, match="CERTIFICATE_UNKNOWN"):
        tls_exchange(address, port, context(pki["trusted"], *pki[which]))
    assert tls_exchange(address, port, context(pki["trusted"], *pki["valid"])) == 7


def test_a_node_is_refused_when_its_ca_is_not_the_trusted_one(cluster, pki):
    """A client that trusts another CA refuses the cluster's nodes: nobody can stand in for one with its own CA."""
    broker = cluster.brokers[0]
    with pytest.raises(ssl.SSLCertVerificationError, match="unable to get local issuer certificate"):
        tls_exchange(broker.address, cluster.client_port, context(pki["foreign_ca"]))


def test_a_node_is_refused_under_a_name_its_certificate_does_not_carry(cluster, pki):
    """Hostname verification: a broker reached as another node is refused (each certificate names only its node)."""
    one, other = cluster.brokers[0], cluster.brokers[1]
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        tls_exchange(one.address, cluster.client_port, context(pki["trusted"]), server_hostname=other.address)
    with pytest.raises(ssl.SSLCertVerificationError, match="mismatch"):
        tls_exchange(one.address, cluster.client_port, context(pki["trusted"]), server_hostname=other.host)


def test_each_node_certificate_names_its_node_only(hosts, cluster, pki):
    """Read on the node: its principal, exactly the names it is reached by, and the cluster's CA as issuer."""
    ca = x509.load_pem_x509_certificate(pki["trusted"].read_bytes())
    for node in (cluster.brokers[0], cluster.controllers[0]):
        pem = hosts[node.host].file("/etc/kafka/tls/keystore.pem").content_string
        cert = x509.load_pem_x509_certificate(pem[pem.index("-----BEGIN CERTIFICATE-----") :].encode())
        assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == node.host
        assert cert.issuer == ca.subject
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        listed = set(san.get_values_for_type(x509.DNSName)) | {
            str(ip) for ip in san.get_values_for_type(x509.IPAddress)
        }
        assert listed == {node.host, node.address}, node.host


# -- SCRAM and ACLs ---------------------------------------------------------------
def errors_of(config):
    """The client's errors, as its error callback gets them (served by poll()), and its log kept quiet."""
    seen = []
    return seen, dict(config, error_cb=seen.append, log_level=0)


def test_a_wrong_scram_password_is_refused(cluster):
    config = dict(cluster.user_configs["kafka-smoke"], **{"sasl.password": "not-the-password"})
    seen, config = errors_of(config)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **config})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=10)
    admin.poll(1)
    auth = [e for e in seen if e.code() == KafkaError._AUTHENTICATION]
    assert auth, f"no authentication error among {seen}"
    assert "invalid credentials" in auth[0].str()
    # The right password for the same user is accepted.
    good = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.user_configs["kafka-smoke"]})
    assert good.list_topics(timeout=20) is not None


@pytest.fixture(scope="module")
def nobody(cluster):
    """A SCRAM user the test makes, with no ACL; removed at the end."""
    password = uuid.uuid4().hex
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion(NOBODY, info, password.encode())])[NOBODY].result()
    config = dict(
        cluster.user_configs["kafka-smoke"], **{"sasl.username": NOBODY, "sasl.password": password, "log_level": 0}
    )
    probe = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **config})

    def logs_in():
        try:
            return probe.list_topics(timeout=5) is not None
        except KafkaException:
            return False

    assert wait_until(logs_in, timeout=60, interval=1), "the new SCRAM user never logged in"
    yield config
    admin.alter_user_scram_credentials([UserScramCredentialDeletion(NOBODY, ScramMechanism.SCRAM_SHA_512)])[
        NOBODY
    ].result()


def code(exc):
    return exc.args[0].code()


def test_a_user_without_an_acl_cannot_read(cluster, nobody):
    """A reader is refused twice: the topic is hidden from its metadata, and its group is refused."""
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "it-nobody", **nobody})
    try:
        topic = consumer.list_topics(TOPIC, timeout=20).topics[TOPIC]
        assert topic.error is not None
        assert topic.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, topic.error
        assert not topic.partitions
        consumer.subscribe([TOPIC])
        deadline, codes = time.monotonic() + 30, set()
        while KafkaError.GROUP_AUTHORIZATION_FAILED not in codes and time.monotonic() < deadline:
            msg = consumer.poll(1)
            if msg is not None:
                assert msg.error() is not None, "a user without an ACL read a record"
                codes.add(msg.error().code())
        assert KafkaError.GROUP_AUTHORIZATION_FAILED in codes, codes
    finally:
        consumer.close()


def test_a_user_without_an_acl_cannot_write(cluster, nobody):
    results = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 20000, **nobody})
    producer.produce(TOPIC, b"refused", on_delivery=lambda err, msg: results.append(err))
    producer.flush(30)
    assert len(results) == 1
    assert results[0] is not None
    assert results[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, results[0]


def test_a_user_without_an_acl_cannot_create_or_delete_topics(cluster, nobody):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **nobody})
    with pytest.raises(KafkaException) as created:
        admin.create_topics([NewTopic("it-nobody-topic", 1, 1)])["it-nobody-topic"].result(timeout=30)
    assert code(created.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as deleted:
        admin.delete_topics([TOPIC])[TOPIC].result(timeout=30)
    assert code(deleted.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert (
        TOPIC
        in AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
        .list_topics(timeout=20)
        .topics
    )


@pytest.mark.parametrize("user", [NOBODY, "kafka-load"])
def test_a_client_user_cannot_alter_acls_or_configs(cluster, nobody, user):
    """Neither a user without ACLs nor one with ACLs on its topic may change ACLs, the topic's or a broker's configs."""
    config = nobody if user == NOBODY else cluster.user_configs[user]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **config})
    acl = AclBinding(
        ResourceType.TOPIC,
        TOPIC,
        ResourcePatternType.LITERAL,
        f"User:{user}",
        "*",
        AclOperation.ALL,
        AclPermissionType.ALLOW,
    )
    with pytest.raises(KafkaException) as acls:
        admin.create_acls([acl])[acl].result(timeout=30)
    assert code(acls.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    topic = ConfigResource(
        ConfigResource.Type.TOPIC,
        TOPIC,
        incremental_configs=[ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as topic_config:
        admin.incremental_alter_configs([topic])[topic].result(timeout=30)
    assert code(topic_config.value) == KafkaError.TOPIC_AUTHORIZATION_FAILED
    broker = ConfigResource(
        ConfigResource.Type.BROKER,
        str(cluster.brokers[0].node_id),
        incremental_configs=[ConfigEntry("min.insync.replicas", "1", incremental_operation=AlterConfigOpType.SET)],
    )
    with pytest.raises(KafkaException) as broker_config:
        admin.incremental_alter_configs([broker])[broker].result(timeout=30)
    assert code(broker_config.value) == KafkaError.CLUSTER_AUTHORIZATION_FAILED


def test_a_user_reaches_only_its_own_topic(cluster):
    """The smoke user's ACLs cover the smoke topic: the load topic is refused to it, and allowed to the load user."""
    outcomes = {}
    for user in ("kafka-smoke", "kafka-load"):
        results = []
        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "message.timeout.ms": 20000, **cluster.user_configs[user]}
        )
        producer.produce(TOPIC, b"acl-check", on_delivery=lambda err, msg, r=results: r.append(err))
        producer.flush(30)
        outcomes[user] = results[0].code() if results and results[0] else results and "ok"
    assert outcomes == {"kafka-smoke": KafkaError.TOPIC_AUTHORIZATION_FAILED, "kafka-load": "ok"}


# -- Rotating a SCRAM password -----------------------------------------------------
ROTATED = "it-rotated"  # a user the test declares, rotates and removes


def logs_in_with(cluster, name, password):
    """True when the user logs in on the client listener with this password (a fresh client each time)."""
    config = dict(cluster.user_configs["kafka-smoke"], **{"sasl.username": name, "sasl.password": password})
    seen, config = errors_of(config)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **config})
    try:
        return admin.list_topics(timeout=10) is not None
    except KafkaException:
        admin.poll(1)
        assert any(e.code() == KafkaError._AUTHENTICATION for e in seen), f"refused, but not for the login: {seen}"
        return False


def test_a_scram_password_rotates_through_the_users_playbook(cluster, tmp_path):
    """Change the declared password, run playbooks/users.yml: the old one is refused, the new one logs in."""
    declared = [{"name": n, "password": c["sasl.password"]} for n, c in cluster.user_configs.items()]
    old, new = uuid.uuid4().hex, uuid.uuid4().hex

    def reconcile(password):
        run = playbook(cluster, "users", kafka_users=[*declared, {"name": ROTATED, "password": password}])
        everything = json.dumps(run.output) + run.stderr
        assert not [p for p in (old, new) if p in everything], "a password reached Ansible's output"
        assert run.ok, run.log or run.text
        return [line for _, r in run.results("Show what changed in the users") for line in r.get("msg", [])]

    try:
        assert reconcile(old) == [f"user {ROTATED}: set its password (new)"]
        assert wait_until(lambda: logs_in_with(cluster, ROTATED, old), timeout=60, interval=1)
        assert reconcile(new) == [f"user {ROTATED}: set its password (the declared password does not log in)"]
        assert wait_until(lambda: logs_in_with(cluster, ROTATED, new), timeout=60, interval=1)
        assert not logs_in_with(cluster, ROTATED, old), "the old password still logs in after the rotation"
        assert reconcile(new) == [], "a second run changed the users again"
    finally:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
        admin.alter_user_scram_credentials([UserScramCredentialDeletion(ROTATED, ScramMechanism.SCRAM_SHA_512)])[
            ROTATED
        ].result()


# The playbooks that handle secrets, each at full verbosity: users.yml sets
# the users, the smoke test gives its job a SCRAM password and its reads
# their cluster's Spark secret. site.yml (the nodes' keys and keystores, the
# SCRAM users, each DC's Spark secret) is read in test_consumer_project.py,
# whose converge from the operator's project runs at full verbosity for it:
# one converge of the running testbed instead of two.
# The rotation drill checks the runs that make new keys (rotate_certificates.yml).
# The smoke test's run at -vvvv (minutes of Spark) runs in `make verify`, not in `make test` (CI's time).
SECRET_PLAYBOOKS = [
    ("users", ("--diff",)),
    pytest.param("smoke_test", (), marks=pytest.mark.outside_ci),
]


@pytest.mark.parametrize(("name", "args"), SECRET_PLAYBOOKS, ids=["users", "smoke_test"])
def test_no_secret_shows_in_what_a_playbook_prints_at_full_verbosity(cluster, name, args, tmp_path):
    """Every testbed secret, and any PEM private key, is absent from all a run printed at -vvvv."""
    secrets, keys = cluster.secrets(), cluster.private_key_files()
    assert secrets, "the inventory gives no secret to look for: the test would pass on anything"
    assert keys, "no private key to look for in kafka_pki_dir"
    run = playbook(cluster, name, "-vvvv", *args, log_dir=tmp_path)
    assert run.ok, run.log or run.text[-3000:]
    # Verbose lines go to stderr where ANSIBLE_VERBOSE_TO_STDERR is set (Molecule sets it for what it runs).
    printed = run.stdout + run.stderr
    assert "Using module file" in printed, "the run's verbose output was not read"
    found = leaks(printed, secrets, keys)
    assert found == [], f"{name}.yml printed secrets (whole output in {run.log}): {found}"
