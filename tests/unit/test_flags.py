"""An opt-in is read as a boolean, strictly: "false" given as an extra var (a string) must not opt in."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import flags, security, topology
from ansible_collections.stretch.kafka.plugins.module_utils.nodes import listener_record

FALSE = [False, "false", "False", "no", "off", "0", "n", 0]
TRUE = [True, "true", "True", "yes", "on", "1", "y", 1]


@pytest.mark.parametrize("value", FALSE)
def test_false_in_every_spelling_is_false(value):
    assert flags.flag(value, "kafka_plaintext_opt_in") is False


@pytest.mark.parametrize("value", TRUE)
def test_true_in_every_spelling_is_true(value):
    assert flags.flag(value, "kafka_plaintext_opt_in") is True


@pytest.mark.parametrize("value", ["maybe", "", None, 2, [True], "truee"])
def test_anything_else_is_refused_naming_the_variable(value):
    with pytest.raises(flags.FlagError) as err:
        flags.flag(value, "kafka_plaintext_opt_in")
    assert str(err.value) == f"kafka_plaintext_opt_in={value!r} is not a boolean: set it to true or false"


@pytest.mark.parametrize("value", ["false", "no", "0"])
def test_a_min_insync_replicas_of_one_is_refused_when_the_opt_in_is_false_as_a_string(value):
    assert topology.min_insync_problems({"kafka_min_insync_replicas": 1}, value) == [
        "kafka_min_insync_replicas=1: an acks=all write would be acknowledged by one replica alone and lost with its "
        "broker; set it to 2 or more, or set kafka_min_insync_replicas_one_opt_in: true to accept that"
    ]
    assert topology.min_insync_problems({"kafka_min_insync_replicas": 1}, "true") == []


def test_a_min_insync_opt_in_that_is_not_a_boolean_is_refused():
    assert topology.min_insync_problems({"kafka_min_insync_replicas": 2}, "maybe") == [
        "kafka_min_insync_replicas_one_opt_in='maybe' is not a boolean: set it to true or false"
    ]


def plaintext_settings(opt_in):
    listeners = {"CONTROLLER": {"port": 9093, "protocol": "SSL"}, "CLIENT": {"port": 9092, "protocol": "PLAINTEXT"}}
    return {
        "listeners": listeners,
        "controller_listener": "CONTROLLER",
        "inter_broker_listener": "CONTROLLER",
        "admin_listener": "CONTROLLER",
        "client_listener": "CLIENT",
        "admin_principal": "kafka-admin",
        "super_users": [],
        "plaintext_opt_in": opt_in,
        "certificates": "generated",
        "users": [],
    }


NODE = {
    "host": "b1",
    "node_id": 1,
    "dc": "dc1",
    "roles": ["broker"],
    "advertised_host": "b1",
    "principal": "b1",
    "listeners": {"CLIENT": listener_record("CLIENT", "b1", {"port": 9092, "protocol": "PLAINTEXT"})},
}


@pytest.mark.parametrize("value", ["false", "no", "0", False])
def test_a_plaintext_listener_is_refused_when_the_opt_in_is_false_as_a_string(value):
    errors, warnings = security.check(plaintext_settings(value), [NODE])
    assert any(e.startswith("kafka_listeners.CLIENT uses PLAINTEXT: the client traffic would cross") for e in errors)
    assert warnings == []


def test_a_plaintext_opt_in_that_is_not_a_boolean_is_refused():
    errors, _ = security.check(plaintext_settings("maybe"), [NODE])
    assert "kafka_plaintext_opt_in='maybe' is not a boolean: set it to true or false" in errors
