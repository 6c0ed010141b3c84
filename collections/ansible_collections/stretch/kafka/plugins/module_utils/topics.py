"""Topics as code: compare the declared topics with the cluster and plan the changes.

Plain data in, plain data out; the kafka_topics module does the talking to
Kafka. A plan has five parts, each keyed by topic name:

    create    {name: {"assignment": {p: [replicas]}, "configs": {key: value}}}
    configs   {name: {"set": {key: value}, "delete": [key, ...]}}
    grow      {name: {"count": n, "assignments": [[replicas] for each new partition]}}
    reassign  {name: {p: [replicas]}}   only the partitions whose list changes
    delete    [name, ...]               only with remove_undeclared

Replica lists come from placement.place(), so new topics get the DC-grouped
layout and existing ones are moved onto it with as few copied replicas as it
can manage.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import placement

# Owned by the replication throttle (kafka_quotas and the reassignment step):
# never declared, never treated as drift.
THROTTLE_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
FIELDS = {"name", "partitions", "replication_factor", "configs"}


class TopicError(ValueError):
    pass


def config_value(value):
    """The string Kafka stores for a declared value: booleans as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _positive_int(topic, field, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TopicError(f"topic '{topic}': {field} must be a positive whole number, got {value!r}")
    return value


def normalize(declared, default_replication_factor):
    """Validate the declared list and return {name: {partitions, replication_factor, configs}}."""
    topics = {}
    for index, item in enumerate(declared or []):
        if not isinstance(item, dict) or "name" not in item:
            raise TopicError(f"topic #{index}: each topic needs at least a name and partitions, got {item!r}")
        name = item["name"]
        if not isinstance(name, str) or not NAME.match(name) or name in (".", ".."):
            raise TopicError(f"topic #{index}: {name!r} is not a valid topic name (letters, digits, '.', '_', '-')")
        unknown = sorted(set(item) - FIELDS)
        if unknown:
            raise TopicError(f"topic '{name}': unknown field(s) {unknown}; a topic has {sorted(FIELDS)}")
        if name in topics:
            raise TopicError(f"topic '{name}' is declared more than once")
        if name.startswith("__"):
            raise TopicError(f"topic '{name}': internal topics are not declared; use the internal-topics option")
        configs = item.get("configs") or {}
        if not isinstance(configs, dict):
            raise TopicError(f"topic '{name}': configs must be a mapping of key to value, got {configs!r}")
        owned = sorted(set(configs) & set(THROTTLE_KEYS))
        if owned:
            raise TopicError(f"topic '{name}': {owned} belong to the replication throttle and cannot be declared")
        topics[name] = {
            "partitions": _positive_int(name, "partitions", item.get("partitions")),
            "replication_factor": _positive_int(
                name, "replication_factor", item.get("replication_factor", default_replication_factor)
            ),
            "configs": {str(k): config_value(v) for k, v in configs.items()},
        }
    return topics


def _drift(declared, current):
    current = {k: v for k, v in current.items() if k not in THROTTLE_KEYS}
    changed = {k: v for k, v in declared.items() if current.get(k) != v}
    removed = sorted(k for k in current if k not in declared)
    return changed, removed


def plan(declared, current, brokers_by_dc, remove_undeclared=False, internal=(), weights=None):
    """The changes that bring the cluster's topics to the declared state.

    declared: normalize()'s result. current: {name: {"partitions": {p: [replicas]},
    "configs": {key: value}}} with the topic-level (dynamic) configs only.
    internal: names of internal topics to bring onto the placement, as they are.
    Raises TopicError listing every topic that cannot be reconciled.
    """
    result = {"create": {}, "configs": {}, "grow": {}, "reassign": {}, "delete": []}
    errors = []
    wanted = dict(declared)
    for name in internal:
        if name in current:
            parts = current[name]["partitions"]
            wanted[name] = {"partitions": len(parts), "replication_factor": len(parts[min(parts)]), "configs": None}
    for name, topic in sorted(wanted.items()):
        have = current.get(name)
        partitions, rf = topic["partitions"], topic["replication_factor"]
        if have and len(have["partitions"]) > partitions:
            errors.append(
                f"topic '{name}': partitions cannot go down from {len(have['partitions'])} to {partitions}"
                " (Kafka cannot remove partitions; create a new topic instead)"
            )
            continue
        try:
            target = placement.place(brokers_by_dc, rf, partitions, have and have["partitions"], weights)
        except placement.PlacementError as exc:
            errors.append(f"topic '{name}': {exc}")
            continue
        if not have:
            result["create"][name] = {"assignment": target, "configs": topic["configs"]}
            continue
        existing = have["partitions"]
        if partitions > len(existing):
            new = range(len(existing), partitions)
            result["grow"][name] = {"count": partitions, "assignments": [target[p] for p in new]}
        moves = {p: target[p] for p in existing if list(existing[p]) != target[p]}
        if moves:
            result["reassign"][name] = moves
        if topic["configs"] is not None:
            changed, removed = _drift(topic["configs"], have["configs"])
            if changed or removed:
                result["configs"][name] = {"set": changed, "delete": removed}
    if errors:
        raise TopicError("; ".join(errors))
    if remove_undeclared:
        result["delete"] = sorted(n for n in current if n not in wanted and not n.startswith("__"))
    return result


def is_empty(changes):
    return not any(changes.values())


def summary(changes, current):
    """One line per change, for the module's output and the diff."""
    lines = []
    for name, item in changes["create"].items():
        lines.append(f"create {name}: {len(item['assignment'])} partitions, configs {item['configs']}")
    for name, item in changes["configs"].items():
        lines.append(f"configs {name}: set {item['set']}, remove {item['delete']}")
    for name, item in changes["grow"].items():
        lines.append(f"partitions {name}: {len(current[name]['partitions'])} -> {item['count']}")
    for name, moves in changes["reassign"].items():
        for p, replicas in sorted(moves.items()):
            lines.append(f"reassign {name}-{p}: {list(current[name]['partitions'][p])} -> {replicas}")
    lines.extend(f"delete {name}" for name in changes["delete"])
    return lines


def throttled_replicas(moves, current):
    """The per-topic throttle values for a reassignment, as Kafka's own tool sets them.

    Leaders throttle what they send for the partitions being moved; followers
    throttle only the replicas being added. Returns {topic: {key: value}}.
    """
    result = {}
    for name, parts in moves.items():
        leader, follower = [], []
        for p, target in sorted(parts.items()):
            old = list(current[name]["partitions"][p])
            added = [b for b in target if b not in old]
            if added:
                leader += [f"{p}:{b}" for b in old]
                follower += [f"{p}:{b}" for b in added]
        if follower:
            result[name] = {THROTTLE_KEYS[0]: ",".join(leader), THROTTLE_KEYS[1]: ",".join(follower)}
    return result
