"""Client quotas and the replication throttle: declared state against the cluster's.

A declared client quota is {"entity": {"user": NAME, "client-id": NAME},
"quotas": {key: number}}. The entity has a user, a client id or both; the
name "<default>" stands for Kafka's default entity of that type.

An entity is keyed here as a sorted tuple of (type, name) pairs, with None
for the default, which is how Kafka's client-quota API names it.
"""

from __future__ import annotations

ENTITY_TYPES = ("user", "client-id")
QUOTA_KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")
DEFAULT = "<default>"

# The per-broker rates of the replication throttle, and the per-topic lists
# that say which replicas it applies to ("*": all of the topic's replicas).
RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
REPLICA_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


class QuotaError(ValueError):
    pass


def entity_key(entity, where):
    if not isinstance(entity, dict) or not entity:
        raise QuotaError(f"{where}: entity must map user and/or client-id to a name, got {entity!r}")
    unknown = sorted(set(entity) - set(ENTITY_TYPES))
    if unknown:
        raise QuotaError(f"{where}: unknown entity type(s) {unknown}; client quotas apply to {list(ENTITY_TYPES)}")
    key = []
    for kind, name in sorted(entity.items()):
        if not isinstance(name, str) or not name:
            raise QuotaError(f"{where}: {kind} must be a name or '{DEFAULT}', got {name!r}")
        key.append((kind, None if name == DEFAULT else name))
    return tuple(key)


def entity_label(key):
    return ",".join(f"{kind}={DEFAULT if name is None else name}" for kind, name in key)


def normalize(declared):
    """Validate the declared list and return {entity key: {quota key: float}}."""
    result = {}
    for index, item in enumerate(declared or []):
        where = f"quota #{index}"
        if not isinstance(item, dict) or set(item) != {"entity", "quotas"}:
            raise QuotaError(f"{where}: a quota has exactly 'entity' and 'quotas', got {item!r}")
        key = entity_key(item["entity"], where)
        where = f"quota for {entity_label(key)}"
        if key in result:
            raise QuotaError(f"{where} is declared more than once")
        values = item["quotas"]
        if not isinstance(values, dict) or not values:
            raise QuotaError(f"{where}: quotas must map {list(QUOTA_KEYS)} to numbers, got {values!r}")
        unknown = sorted(set(values) - set(QUOTA_KEYS))
        if unknown:
            raise QuotaError(f"{where}: unknown quota key(s) {unknown}; known: {list(QUOTA_KEYS)}")
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise QuotaError(f"{where}: {name} must be a positive number, got {value!r}")
        result[key] = {name: float(value) for name, value in values.items()}
    return result


def plan(declared, current, remove_undeclared=False):
    """{entity key: {"set": {key: value}, "delete": [key]}} for the entities that differ.

    Keys an entity has but does not declare are removed; entities not
    declared at all are left alone unless remove_undeclared.
    """
    changes = {}
    for key in sorted(set(declared) | set(current), key=entity_label):
        want, have = declared.get(key), current.get(key, {})
        if want is None and not remove_undeclared:
            continue
        want = want or {}
        set_ = {k: v for k, v in want.items() if have.get(k) != v}
        delete = sorted(k for k in have if k not in want)
        if set_ or delete:
            changes[key] = {"set": set_, "delete": delete}
    return changes


def nonempty(changes):
    """{name: change} without the changes that neither set nor delete anything."""
    return {name: c for name, c in sorted(changes.items()) if c["set"] or c["delete"]}


def throttle_brokers(state, brokers):
    """The brokers whose own throttle rates are read, for a throttle to be "present" or "absent".

    brokers: {broker id: {"dc", "fenced"}}, the registered brokers. "present"
    reads the unfenced ones: a lost DC's brokers are fenced and cannot answer,
    and the cluster-wide rates hold for them. "absent" must read every one,
    since a rate a broker holds itself overrides the defaults: a fenced
    broker cannot be read, so the throttle cannot be confirmed absent, and
    that is a QuotaError naming it.
    """
    fenced = sorted(b for b, info in brokers.items() if info["fenced"])
    if state == "absent" and fenced:
        raise QuotaError(
            f"the replication throttle cannot be confirmed absent: broker(s) {', '.join(map(str, fenced))} are "
            "fenced, so a throttle rate set on them cannot be read or removed; remove it once they are back"
        )
    return sorted(b for b, info in brokers.items() if not info["fenced"])


def throttle_plan(state, rate, broker_configs, topic_configs, cluster_configs=None):
    """Changes that apply (state "present") or remove the replication throttle.

    The rates go to the cluster-wide defaults, which every broker applies,
    one that starts later too (a DC's brokers are down when its recovery
    throttle is applied, and a broker's own configuration can only be changed
    through it). A rate set on a broker itself overrides the default, so
    "present" removes one that differs from the rate, and "absent" removes
    them all.

    broker_configs: {broker id: {key: value}}, topic_configs: {topic: {key: value}},
    cluster_configs: {key: value}, the dynamic configs each has now. Returns
    {"cluster": {"set": {...}, "delete": [...]}, "brokers": {...}, "topics": {...}},
    the last two {name: {"set": {...}, "delete": [...]}}.
    """
    if state not in ("present", "absent"):
        raise QuotaError(f"replication throttle state must be present or absent, got {state!r}")
    if state == "present" and (isinstance(rate, bool) or not isinstance(rate, int) or rate <= 0):
        raise QuotaError(f"replication throttle rate must be a positive number of bytes per second, got {rate!r}")
    value = str(rate)

    def held(have, keys, wanted):
        """Where the throttle lives: keys set to wanted when present, removed when absent."""
        if state == "present":
            return {"set": {k: wanted for k in keys if have.get(k) != wanted}, "delete": []}
        return {"set": {}, "delete": [k for k in keys if k in have]}

    def overriding(have):
        """A broker's own rates, which override the defaults: removed when absent, or when they differ."""
        return {"set": {}, "delete": [k for k in RATE_KEYS if k in have and (state == "absent" or have[k] != value)]}

    return {
        "cluster": held(cluster_configs or {}, RATE_KEYS, value),
        "brokers": nonempty({b: overriding(have) for b, have in broker_configs.items()}),
        "topics": nonempty({t: held(have, REPLICA_KEYS, "*") for t, have in topic_configs.items()}),
    }
