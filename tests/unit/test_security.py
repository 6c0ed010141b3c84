"""Security derived from the listeners; users and ACLs as code."""

import logging

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import acls, kafka_admin, security, users

LISTENERS = {
    "CONTROLLER": {"port": 9093, "protocol": "SSL"},
    "REPLICATION": {"port": 9091, "protocol": "SSL"},
    "CLIENT": {"port": 9092, "protocol": "SASL_SSL"},
}
TLS = {"keystore": "/etc/kafka/tls/keystore.pem", "truststore": "/etc/kafka/tls/ca.pem"}


def test_node_to_node_listeners_require_a_client_certificate_and_clients_use_scram():
    props = security.server_properties(LISTENERS, TLS, "SCRAM-SHA-512", {"super_users": "User:a"})
    assert props["listener.name.controller.ssl.client.auth"] == "required"
    assert props["listener.name.replication.ssl.client.auth"] == "required"
    assert props["listener.name.client.ssl.client.auth"] == "none"
    assert props["listener.name.client.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert "ScramLoginModule required" in props["listener.name.client.scram-sha-512.sasl.jaas.config"]
    assert props["ssl.keystore.type"] == props["ssl.truststore.type"] == "PEM"
    assert props["ssl.endpoint.identification.algorithm"] == "https"
    assert "ssl.keystore.password" not in props, "with PEM only ssl.key.password applies"
    assert "ssl.key.password" not in props, "the key is unencrypted PKCS#8: Java 17 cannot decrypt PBES2"
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "false"


def test_a_tls_listener_without_key_material_is_refused():
    with pytest.raises(security.SecurityError, match="no keystore and truststore"):
        security.server_properties(LISTENERS, None, "SCRAM-SHA-512", None)


def test_plaintext_listeners_get_no_tls_settings():
    clear = {name: {"port": 1, "protocol": "PLAINTEXT"} for name in LISTENERS}
    assert security.server_properties(clear, None, "SCRAM-SHA-512", None) == {}
    assert security.clear_listeners(clear) == ["CLIENT", "CONTROLLER", "REPLICATION"]
    assert security.clear_listeners(LISTENERS) == []


def test_super_users_are_every_node_and_the_admin():
    records = [{"host": "c1"}, {"host": "b1", "principal": "kafka-b1"}]
    assert (
        security.super_users(records, "kafka-admin", ["User:ops"]) == "User:c1;User:kafka-b1;User:kafka-admin;User:ops"
    )


def test_a_principal_super_users_could_not_hold_as_itself_is_refused_naming_its_variable():
    records = [{"host": "b1", "principal": "b1"}, {"host": "b2", "principal": "b2;User:mallory"}]
    assert security.principal_problems(records, "kafka-admin\nx", ["ops", "ops;User:eve"]) == [
        f"{where}={value!r} cannot go into super.users, which separates principals with ';': "
        "a principal holds no ';' and no control character"
        for where, value in (
            ("b2: kafka_tls_principal", "b2;User:mallory"),
            ("kafka_adminclient_principal", "kafka-admin\nx"),
            ("kafka_super_users[1]", "ops;User:eve"),
        )
    ]
    assert security.principal_problems(records[:1], "CN with spaces, O=Org", ["User:ops"]) == []


def test_each_client_library_gets_its_own_spelling_of_one_description():
    client = {"protocol": "SASL_SSL", "ca": "/ca.pem", "username": "u", "password": "p", "mechanism": "SCRAM-SHA-512"}
    assert security.librdkafka(client) == {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": "/ca.pem",
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "u",
        "sasl.password": "p",
    }
    admin = {"protocol": "SSL", "ca": "/ca.pem", "cert": "/a.crt", "key": "/a.key", "key_password": "kp"}
    assert security.kafka_python(admin) == {
        "security_protocol": "SSL",
        "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": True,
        "ssl_certfile": "/a.crt",
        "ssl_keyfile": "/a.key",
        "ssl_password": "kp",
    }
    # kafka_users logs in as each user itself: without a username, the transport only.
    login = {"protocol": "SASL_SSL", "ca": "/ca.pem"}
    assert security.kafka_python(login) == {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": True,
    }
    assert security.kafka_python(client)["sasl_plain_username"] == "u"


# -- users -----------------------------------------------------------------------
def test_users_are_added_rotated_and_removed_only_when_asked():
    declared = users.normalize(
        [
            {"name": "smoke", "password": "p" * 12},
            {"name": "etl", "password": "q" * 12},
            {"name": "ops", "password": "r" * 12},
        ],
        "SCRAM-SHA-512",
    )
    current = {"smoke": ["SCRAM-SHA-512"], "etl": ["SCRAM-SHA-512", "SCRAM-SHA-256"], "old": ["SCRAM-SHA-512"]}
    tried = []

    def logs_in(name, password, mechanism):
        tried.append(name)
        return name == "smoke"

    changes = users.plan(declared, current, logs_in)
    assert changes == {
        "set": {"etl": "the declared password does not log in", "ops": "new"},
        "delete": {"etl": ["SCRAM-SHA-256"]},
    }
    assert sorted(tried) == ["etl", "smoke"], "a login is tried only where a credential exists"
    assert users.plan(declared, current, logs_in, remove_undeclared=True)["delete"]["old"] == ["SCRAM-SHA-512"]
    assert not any("p" * 12 in line for line in users.summary(changes)), "no password in the output"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"name": "a b", "password": "x" * 8}, "not a valid user name"),
        ({"name": "etl\n", "password": "x" * 8}, "not a valid user name"),
        ({"name": "short", "password": "x"}, "at least 8 characters"),
        ({"name": "m", "password": "x" * 8, "mechanism": "PLAIN"}, "mechanism 'PLAIN' is not one of"),
        ({"name": "f", "password": "x" * 8, "role": "admin"}, "unknown field(s) ['role']"),
    ],
)
def test_bad_users_are_refused_by_name(item, message):
    with pytest.raises(users.UserError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        users.normalize([item], "SCRAM-SHA-512")


# -- ACLs -----------------------------------------------------------------------
SMOKE = {"principal": "User:smoke", "resource": {"type": "topic", "name": "smoke"}, "operations": ["read", "write"]}


def test_a_declaration_expands_to_one_entry_per_operation():
    assert acls.normalize([SMOKE]) == {
        ("User:smoke", "*", "topic", "smoke", "literal", "read", "allow"),
        ("User:smoke", "*", "topic", "smoke", "literal", "write", "allow"),
    }


def test_acls_are_added_and_removed_only_when_asked():
    declared = acls.normalize([SMOKE])
    stray = ("User:old", "*", "group", "g", "prefixed", "read", "allow")
    current = {("User:smoke", "*", "topic", "smoke", "literal", "read", "allow"), stray}
    assert acls.plan(declared, current) == {
        "create": [("User:smoke", "*", "topic", "smoke", "literal", "write", "allow")],
        "delete": [],
    }
    assert acls.plan(declared, current, remove_undeclared=True)["delete"] == [stray]
    assert acls.summary(acls.plan(declared, current, True)) == [
        "acl add: allow User:smoke write on topic smoke",
        "acl remove: allow User:old read on group g*",
    ]


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (SMOKE | {"principal": "smoke"}, "principal must be like User:name"),
        (SMOKE | {"resource": {"type": "table", "name": "x"}}, "resource type 'table' is not one of"),
        (SMOKE | {"operations": ["read", "own"]}, "operation 'own' is not one of"),
        (SMOKE | {"resource": {"type": "topic", "name": "x", "pattern": "glob"}}, "pattern 'glob'"),
    ],
)
def test_bad_acls_are_refused_by_name(item, message):
    with pytest.raises(acls.AclError, match=message):
        acls.normalize([item])


class FakeModule:
    """The parts of AnsibleModule that apply_changes uses; fail_json raises as the real one exits."""

    def __init__(self, check_mode=False, diff=False):
        self.check_mode, self._diff = check_mode, diff

    def fail_json(self, **kwargs):
        raise SystemExit(kwargs)


@pytest.mark.parametrize("check_mode", [False, True])
def test_apply_changes_applies_only_outside_check_mode_and_shows_every_line_in_the_diff(check_mode):
    applied = []
    lines = ["user a: set its password (new)", "user b: remove SCRAM-SHA-256"]
    result = kafka_admin.apply_changes(FakeModule(check_mode, diff=True), lines, lambda: applied.append(1) or [], "x")
    assert result["changed"] is True
    assert result["diff"]["after"] == "user a: set its password (new)\nuser b: remove SCRAM-SHA-256\n"
    assert applied == ([] if check_mode else [1])


def test_apply_changes_with_nothing_to_do_applies_nothing():
    result = kafka_admin.apply_changes(FakeModule(), [], lambda: pytest.fail("applied an empty plan"), "x")
    assert result == {"changed": False, "changes": []}


def test_apply_changes_fails_with_what_the_cluster_refused():
    with pytest.raises(SystemExit) as exc:
        kafka_admin.apply_changes(
            FakeModule(), ["acl x"], lambda: ["acl x: CLUSTER_AUTHORIZATION_FAILED"], "ACL changes"
        )
    failure = exc.value.args[0]
    assert failure["msg"] == "the cluster refused ACL changes: ['acl x: CLUSTER_AUTHORIZATION_FAILED']"
    assert failure["changed"] is True


def refusing_client(logged):
    """A KafkaAdminClient stand-in that times out as kafka-python 3.0 does, logging `logged` on the way."""
    from kafka import errors

    def client(**_):
        if logged is not None:
            logging.getLogger("kafka.net.manager").warning("Bootstrap connection to %s failed: %s", "b-0", logged)
        raise errors.KafkaTimeoutError("Unable to bootstrap")

    return client


def test_a_refused_login_is_false_and_an_unreachable_listener_is_an_error(monkeypatch):
    from kafka import errors

    refused = errors.SaslAuthenticationFailedError("invalid credentials")
    # No broker runs here: the stubbed client is the one that answers.
    monkeypatch.setattr(kafka_admin, "answering", lambda addresses, config: (list(addresses), []))
    monkeypatch.setattr(kafka_admin, "KafkaAdminClient", refusing_client(refused))
    assert kafka_admin.logs_in("b:9092", {}, "u", "p" * 8, "SCRAM-SHA-512") is False
    monkeypatch.setattr(kafka_admin, "KafkaAdminClient", refusing_client(errors.KafkaConnectionError("refused")))
    with pytest.raises(
        kafka_admin.AdminError, match="cannot reach b:9092 to check u's login: KafkaTimeoutError.*refused"
    ):
        kafka_admin.logs_in("b:9092", {}, "u", "p" * 8, "SCRAM-SHA-512")
    assert not [h for h in logging.getLogger("kafka").handlers if isinstance(h, kafka_admin._AuthFailures)]
