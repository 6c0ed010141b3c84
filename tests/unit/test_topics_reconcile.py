"""A topics run against a fake cluster: refusals before changes, check mode, and the throttle a move leaves behind."""

import copy

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import placement
from ansible_collections.stretch.kafka.plugins.module_utils.quotas import RATE_KEYS, REPLICA_KEYS
from ansible_collections.stretch.kafka.plugins.module_utils.topics import TopicError, normalize, reconcile

BROKERS = [{"node_id": b, "dc": dc} for b, dc in ((101, "dc1"), (102, "dc1"), (201, "dc2"), (202, "dc2"))]
OPTIONS = {"remove_undeclared": False, "internal_topics": False, "throttle_rate": 1000, "reassignment_timeout": 5}
KAFKA_PLACED = {0: [101, 201, 102], 1: [201, 102, 202]}  # RF 3, racks alternating


class FakeAdmin:
    """The Admin methods a topics run calls, over plain dicts; records every write."""

    def __init__(self, topics=None, broker_configs=None, topic_configs=None, refuse=None, cluster_configs=None):
        # fail(kind, name, change): the error the cluster answers a write with, or None
        self.fail = lambda kind, name, change: None
        self.topic_state = copy.deepcopy(topics or {})
        self.broker_cfg = {b["node_id"]: {} for b in BROKERS}
        self.broker_cfg.update(copy.deepcopy(broker_configs or {}))
        self.topic_cfg = copy.deepcopy(topic_configs or {})
        self.cluster_cfg = copy.deepcopy(cluster_configs or {})
        self.refuse = refuse or {}
        self.writes = []
        self.config_reads = []  # the keys each read of topic configs asked for (None: every key)

    def brokers(self):
        return {b["node_id"]: {"dc": b["dc"], "fenced": False} for b in BROKERS}

    def reassignments(self):
        return {}

    def wait_reassignments(self, partitions, timeout):
        return []

    def topics(self):
        return {n: {"partitions": dict(p), "internal": False} for n, p in self.topic_state.items()}

    def topic_configs(self, names, keys=None):
        self.config_reads.append(keys)
        return {n: {k: v for k, v in self.topic_cfg.get(n, {}).items() if keys is None or k in keys} for n in names}

    def broker_configs(self, ids):
        return {b: dict(self.broker_cfg.get(b, {})) for b in ids}

    def cluster_configs(self):
        return dict(self.cluster_cfg)

    def create_topics(self, creates, validate_only=False):
        if not validate_only and creates:
            self.writes.append(("create", sorted(creates)))
            for name, item in creates.items():
                self.topic_state[name] = dict(item["assignment"])
        return {n: self.refuse[n] for n in creates if n in self.refuse}

    def create_partitions(self, grow, validate_only=False):
        return {}

    def alter_configs(self, kind, changes, validate_only=False):
        if validate_only or not changes:
            return {}
        self.writes.append((kind, copy.deepcopy(changes)))
        store = self.broker_cfg if kind == "broker" else self.topic_cfg
        errors = {}
        for name, change in changes.items():
            error = self.fail(kind, name, change)
            if error:
                errors[name] = error
                continue
            cfg = store.setdefault(name, {})
            cfg.update(change.get("set", {}))
            for key in change.get("delete", []):
                cfg.pop(key, None)
        return errors

    def reassign(self, moves):
        self.writes.append(("reassign", sorted(moves)))
        self.during = (copy.deepcopy(self.broker_cfg), copy.deepcopy(self.topic_cfg))
        for name, parts in moves.items():
            self.topic_state[name].update(parts)
        return {}

    def elect_preferred(self, partitions):
        self.writes.append(("elect", len(partitions)))

    def delete_topics(self, names):
        return {}


def run(admin, *topics, check_mode=False):
    return reconcile(admin, normalize(list(topics), 4), BROKERS, OPTIONS, check_mode=check_mode, diff=True)


def test_a_move_sets_a_throttle_on_the_added_replicas_and_removes_it_afterwards():
    admin = FakeAdmin({"legacy": KAFKA_PLACED})
    result = run(admin, {"name": "legacy", "partitions": 2})
    assert result["changed"]
    assert result["reassigned"] == ["legacy-0", "legacy-1"]
    brokers_during, topics_during = admin.during
    assert all(brokers_during[b] == dict.fromkeys(RATE_KEYS, "1000") for b in brokers_during)
    assert set(topics_during["legacy"]) == set(REPLICA_KEYS)
    assert admin.broker_cfg == {b["node_id"]: {} for b in BROKERS}, "a rate stayed on a broker"
    assert admin.topic_cfg["legacy"] == {}, "a replica list stayed on the topic"
    assert not placement.violations(admin.topic_state["legacy"], {"dc1": [101, 102], "dc2": [201, 202]})


def test_a_move_during_a_recovery_keeps_the_recovery_throttle_as_it_was():
    # The recovery throttle's rates are cluster-wide: they hold for every broker, so the move sets none of its own.
    recovery_rates = {**dict.fromkeys(RATE_KEYS, "5000"), "min.insync.replicas": "2"}
    recovery_topics = {"legacy": dict.fromkeys(REPLICA_KEYS, "*"), "other": dict.fromkeys(REPLICA_KEYS, "*")}
    admin = FakeAdmin({"legacy": KAFKA_PLACED}, None, recovery_topics, cluster_configs=recovery_rates)
    run(admin, {"name": "legacy", "partitions": 2})
    no_rates = {b["node_id"]: {} for b in BROKERS}
    assert admin.broker_cfg == no_rates
    assert admin.topic_cfg == recovery_topics
    assert admin.during == (no_rates, recovery_topics), "the move ran under the recovery throttle as it was"


def test_a_move_restores_a_rate_set_before_it_and_removes_only_its_own():
    # Brokers with a rate already keep it, and are not touched; the others get the move's and lose it after.
    before = {101: dict.fromkeys(RATE_KEYS, "7000")}
    admin = FakeAdmin({"legacy": KAFKA_PLACED}, before)
    run(admin, {"name": "legacy", "partitions": 2})
    assert admin.during[0][101] == dict.fromkeys(RATE_KEYS, "7000")
    assert admin.during[0][202] == dict.fromkeys(RATE_KEYS, "1000")
    assert admin.broker_cfg[101] == dict.fromkeys(RATE_KEYS, "7000")
    assert admin.broker_cfg[202] == {}


def test_check_mode_changes_nothing_and_says_what_it_would_do():
    admin = FakeAdmin({"legacy": KAFKA_PLACED})
    result = run(admin, {"name": "legacy", "partitions": 2}, {"name": "orders", "partitions": 4}, check_mode=True)
    assert result["changed"]
    assert any(line.startswith("create orders") for line in result["changes"])
    assert any(line.startswith("reassign legacy-0") for line in result["changes"])
    assert admin.writes == []
    assert "orders" in result["diff"]["after"]


def test_a_declaration_the_cluster_refuses_changes_nothing():
    admin = FakeAdmin(refuse={"orders": "Unknown topic config name: retention.msec"})
    with pytest.raises(TopicError, match="topic 'orders': Unknown topic config name: retention.msec"):
        run(admin, {"name": "orders", "partitions": 4})
    assert admin.writes == []


def test_a_run_refuses_to_place_with_a_broker_down():
    admin = FakeAdmin()
    admin.brokers = lambda: {b["node_id"]: {"dc": b["dc"], "fenced": b["node_id"] == 202} for b in BROKERS}
    with pytest.raises(TopicError, match="broker 202 is not registered and unfenced"):
        run(admin, {"name": "orders", "partitions": 4})


def test_a_throttle_the_cluster_refuses_to_set_stops_the_move_and_undoes_the_rest():
    admin = FakeAdmin({"legacy": KAFKA_PLACED})
    admin.fail = lambda kind, name, change: "Cluster authorization failed." if (kind, name) == ("broker", 202) else None
    refused = r"could not be set.*broker 202: Cluster authorization failed.*nothing was moved"
    with pytest.raises(TopicError, match=refused):
        run(admin, {"name": "legacy", "partitions": 2})
    assert ("reassign", ["legacy"]) not in admin.writes, "partitions moved without their throttle"
    assert admin.topic_state["legacy"] == KAFKA_PLACED
    assert admin.broker_cfg == {b["node_id"]: {} for b in BROKERS}, "the rates that were set stayed"
    assert admin.topic_cfg.get("legacy", {}) == {}


def test_a_throttle_the_cluster_refuses_to_remove_fails_the_run_naming_it():
    admin = FakeAdmin({"legacy": KAFKA_PLACED})
    admin.fail = lambda kind, name, change: "timed out" if kind == "topic" and change["delete"] else None
    with pytest.raises(TopicError, match=r"could not be removed.*topic legacy: timed out"):
        run(admin, {"name": "legacy", "partitions": 2})
    assert admin.broker_cfg == {b["node_id"]: {} for b in BROKERS}, "the brokers' rates were not removed"


class GrownAdmin(FakeAdmin):
    """The fake cluster with a third dc1 broker, 103, registered: one the topics hold no replica on yet."""

    def brokers(self):
        return {**super().brokers(), 103: {"dc": "dc1", "fenced": False}}


GROWN = [*BROKERS, {"node_id": 103, "dc": "dc1"}]


def test_balancing_is_asked_for_shown_in_check_mode_and_only_then_copies():
    admin = GrownAdmin({"orders": dict(enumerate(placement.ideal({"dc1": [101, 102], "dc2": [201, 202]}, 4, 8)))})
    declared = normalize([{"name": "orders", "partitions": 8}], 4)
    converge = reconcile(admin, declared, GROWN, OPTIONS, diff=True)
    assert not converge["changed"]
    assert converge["changes"] == []
    assert admin.writes == []
    assert converge["unbalanced"] == {
        "orders": ["preferred leaders per broker in DC dc1 differ by more than 1: [2, 2, 0]"]
    }
    balance = dict(OPTIONS, balance=True)
    shown = reconcile(admin, declared, GROWN, balance, check_mode=True, diff=True)
    assert shown["changed"]
    assert shown["moved_replicas"] > 0
    assert all(line.startswith("reassign orders-") for line in shown["changes"])
    assert admin.writes == [], "check mode moved a replica"
    done = reconcile(admin, declared, GROWN, balance, diff=True)
    assert done["changes"] == shown["changes"]
    assert done["reassigned"]
    assert done["unbalanced"] == {}
    assert reconcile(admin, declared, GROWN, OPTIONS)["changed"] is False


def test_a_move_reads_of_the_moved_topics_only_their_throttle_keys():
    # Every config of the declared topics (to see what drifted), then the throttle's two of those being moved.
    admin = FakeAdmin({"legacy": KAFKA_PLACED}, topic_configs={"legacy": {"retention.ms": "1000"}})
    run(admin, {"name": "legacy", "partitions": 2, "configs": {"retention.ms": 1000}})
    assert admin.config_reads == [None, REPLICA_KEYS]
