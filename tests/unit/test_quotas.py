"""Client quotas and the replication throttle: validation and the reconcile plan."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.quotas import (
    QuotaError,
    entity_label,
    normalize,
    plan,
    throttle_plan,
)

DECLARED = [
    {"entity": {"user": "<default>"}, "quotas": {"producer_byte_rate": 1048576}},
    {"entity": {"user": "etl", "client-id": "loader"}, "quotas": {"request_percentage": 50}},
]


def test_entities_are_keyed_as_kafka_names_them_with_none_for_the_default():
    quotas = normalize(DECLARED)
    assert quotas == {
        (("user", None),): {"producer_byte_rate": 1048576.0},
        (("client-id", "loader"), ("user", "etl")): {"request_percentage": 50.0},
    }
    assert [entity_label(k) for k in quotas] == ["user=<default>", "client-id=loader,user=etl"]


def test_only_what_differs_is_changed_and_undeclared_keys_of_a_declared_entity_go():
    current = {
        (("user", None),): {"producer_byte_rate": 1048576.0, "consumer_byte_rate": 5.0},
        (("client-id", "loader"), ("user", "etl")): {"request_percentage": 25.0},
        (("user", "stray"),): {"producer_byte_rate": 1.0},
    }
    changes = plan(normalize(DECLARED), current)
    assert changes == {
        (("client-id", "loader"), ("user", "etl")): {"set": {"request_percentage": 50.0}, "delete": []},
        (("user", None),): {"set": {}, "delete": ["consumer_byte_rate"]},
    }
    assert plan(normalize(DECLARED), current, remove_undeclared=True)[(("user", "stray"),)] == {
        "set": {},
        "delete": ["producer_byte_rate"],
    }


def test_a_declared_state_already_in_place_needs_no_change():
    assert plan(normalize(DECLARED), normalize(DECLARED)) == {}


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ({"entity": {"group": "g"}, "quotas": {"producer_byte_rate": 1}}, "unknown entity type(s) ['group']"),
        (
            {"entity": {"user": "u"}, "quotas": {"fetch_rate": 1}},
            "quota for user=u: unknown quota key(s) ['fetch_rate']",
        ),
        ({"entity": {"user": "u"}, "quotas": {"producer_byte_rate": -1}}, "must be a positive number, got -1"),
        ({"entity": {"user": ""}, "quotas": {"producer_byte_rate": 1}}, "user must be a name or '<default>'"),
        ({"entity": {}, "quotas": {"producer_byte_rate": 1}}, "entity must map user and/or client-id"),
        ({"entity": {"user": "u"}}, "a quota has exactly 'entity' and 'quotas'"),
    ],
)
def test_bad_quotas_are_refused_naming_the_entity_or_the_key(item, message):
    with pytest.raises(QuotaError) as err:
        normalize([item])
    assert message in str(err.value)


def test_the_replication_throttle_is_applied_to_every_broker_and_topic_then_removed():
    brokers = {101: {}, 201: {"leader.replication.throttled.rate": "100"}}
    topics = {"orders": {}, "smoke": {"leader.replication.throttled.replicas": "*"}}
    present = throttle_plan("present", 100, brokers, topics)
    assert present["brokers"] == {
        101: {
            "set": {"leader.replication.throttled.rate": "100", "follower.replication.throttled.rate": "100"},
            "delete": [],
        },
        201: {"set": {"follower.replication.throttled.rate": "100"}, "delete": []},
    }
    assert present["topics"]["smoke"] == {"set": {"follower.replication.throttled.replicas": "*"}, "delete": []}
    absent = throttle_plan("absent", None, brokers, topics)
    assert absent == {
        "brokers": {201: {"set": {}, "delete": ["leader.replication.throttled.rate"]}},
        "topics": {"smoke": {"set": {}, "delete": ["leader.replication.throttled.replicas"]}},
    }
    assert throttle_plan("absent", None, {101: {}}, {"orders": {}}) == {"brokers": {}, "topics": {}}


@pytest.mark.parametrize(("state", "rate"), [("on", 1), ("present", 0), ("present", "fast")])
def test_a_bad_throttle_setting_is_refused(state, rate):
    with pytest.raises(QuotaError):
        throttle_plan(state, rate, {}, {})
