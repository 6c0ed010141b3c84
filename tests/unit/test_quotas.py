"""Client quotas and the replication throttle: validation and the reconcile plan."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.quotas import (
    RATE_KEYS,
    REPLICA_KEYS,
    QuotaError,
    entity_label,
    normalize,
    plan,
    throttle_plan,
)
from ansible_collections.stretch.kafka.plugins.modules import kafka_quotas

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


def test_the_replication_throttle_is_applied_cluster_wide_and_to_every_topic_then_removed():
    cluster = {"leader.replication.throttled.rate": "100", "min.insync.replicas": "2"}
    brokers = {
        101: {},
        201: {"follower.replication.throttled.rate": "100"},
        202: {"leader.replication.throttled.rate": "5"},
    }
    topics = {"orders": {}, "smoke": {"leader.replication.throttled.replicas": "*"}}
    present = throttle_plan("present", 100, brokers, topics, cluster)
    # The defaults hold for every broker, one that is down now too; a broker's own other rate would override them.
    assert present["cluster"] == {"set": {"follower.replication.throttled.rate": "100"}, "delete": []}
    assert present["brokers"] == {202: {"set": {}, "delete": ["leader.replication.throttled.rate"]}}
    assert present["topics"] == {
        "orders": {"set": dict.fromkeys(REPLICA_KEYS, "*"), "delete": []},
        "smoke": {"set": {"follower.replication.throttled.replicas": "*"}, "delete": []},
    }
    absent = throttle_plan("absent", None, brokers, topics, cluster)
    assert absent == {
        "cluster": {"set": {}, "delete": ["leader.replication.throttled.rate"]},
        "brokers": {
            201: {"set": {}, "delete": ["follower.replication.throttled.rate"]},
            202: {"set": {}, "delete": ["leader.replication.throttled.rate"]},
        },
        "topics": {"smoke": {"set": {}, "delete": ["leader.replication.throttled.replicas"]}},
    }
    nothing = {"cluster": {"set": {}, "delete": []}, "brokers": {}, "topics": {}}
    assert throttle_plan("absent", None, {101: {}}, {"orders": {}}, {"min.insync.replicas": "2"}) == nothing
    on = {
        "cluster": dict.fromkeys(RATE_KEYS, "100"),
        "brokers": {101: {}},
        "topics": {"orders": dict.fromkeys(REPLICA_KEYS, "*")},
    }
    assert throttle_plan("present", 100, on["brokers"], on["topics"], on["cluster"]) == nothing


@pytest.mark.parametrize(("state", "rate"), [("on", 1), ("present", 0), ("present", "fast")])
def test_a_bad_throttle_setting_is_refused(state, rate):
    with pytest.raises(QuotaError):
        throttle_plan(state, rate, {}, {})


class ThrottledCluster:
    """What the quotas module reads for the throttle: broker 202 is fenced, with a rate of its own."""

    def __init__(self):
        self.read = []

    def brokers(self):
        return {101: {"dc": "dc1", "fenced": False}, 202: {"dc": "dc2", "fenced": True}}

    def broker_configs(self, ids):
        self.read += list(ids)
        return {b: dict.fromkeys(RATE_KEYS, "1000") if b == 202 else {} for b in ids}

    def topics(self):
        return {}

    def topic_configs(self, names, keys=None):
        return {}

    def cluster_configs(self):
        return {}


def test_the_throttle_is_not_taken_for_absent_while_a_fenced_broker_may_hold_a_rate():
    with pytest.raises(QuotaError, match=r"broker\(s\) 202.*fenced"):
        kafka_quotas.throttle_changes(ThrottledCluster(), {"state": "absent", "rate": 1000})


def test_the_throttle_is_applied_with_a_lost_dcs_brokers_fenced():
    cluster = ThrottledCluster()
    changes = kafka_quotas.throttle_changes(cluster, {"state": "present", "rate": 1000})
    assert changes["cluster"]["set"] == dict.fromkeys(RATE_KEYS, "1000")
    assert cluster.read == [101]
