"""Topics as code: compare the declared topics with the cluster and plan the changes.

Plain data in, plain data out; the kafka_topics module does the talking to
Kafka. A plan has five parts, each keyed by topic name:

    create    {name: {"assignment": {p: [replicas]}, "configs": {key: value}}}
    configs   {name: {"set": {key: value}, "delete": [key, ...]}}
    grow      {name: {"count": n, "assignments": [[replicas] for each new partition]}}
    reassign  {name: {p: [replicas]}}   only the partitions whose list changes
    delete    [name, ...]               only with remove_undeclared

Replica lists come from placement.place(), so new topics get the DC-grouped
layout, laid out against what the other topics put on the brokers. An existing
topic is repaired: a partition whose list meets the placement's rules keeps
its replicas whatever the other topics hold, one that breaks them is moved
onto them with as few copied replicas as it can manage. Balancing an existing
topic (moving replicas of partitions that meet the rules, as onto a broker
just added) is asked for with balance, never done by itself.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import placement
from ansible_collections.stretch.kafka.plugins.module_utils.quotas import RATE_KEYS, nonempty

# Owned by the replication throttle (kafka_quotas and the reassignment step):
# never declared, never treated as drift.
THROTTLE_KEYS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
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
        if not isinstance(name, str) or not NAME.fullmatch(name) or name in (".", ".."):
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


def plan(declared, current, brokers_by_dc, remove_undeclared=False, internal=(), weights=None, balance=False):
    """The changes that bring the cluster's topics to the declared state.

    declared: normalize()'s result. current: {name: {"partitions": {p: [replicas]},
    "configs": {key: value}}} with the topic-level (dynamic) configs only.
    internal: names of internal topics to bring onto the placement, as they are.
    balance: balance the existing topics too (placement.place()), which may
    copy replicas of partitions that meet the rules.
    Raises TopicError listing every topic that cannot be reconciled.
    """
    result = {"create": {}, "configs": {}, "grow": {}, "reassign": {}, "delete": []}
    errors = []
    wanted = dict(declared)
    # What every topic puts on each broker; a topic being placed is taken out
    # of it first, so its new layout balances against all the others.
    load = placement.cluster_load(t["partitions"] for t in current.values())
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
        if have:
            placement.add_load(load, have["partitions"], -1)
        try:
            target = placement.place(
                brokers_by_dc, rf, partitions, have and have["partitions"], weights, load, balance=balance
            )
        except placement.PlacementError as exc:
            errors.append(f"topic '{name}': {exc}")
            continue
        placement.add_load(load, target)
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


def _partitions_after(have, changes, name):
    """{p: [replicas]} of an existing topic once a plan's moves and growth are made."""
    parts = dict(have["partitions"])
    parts.update(changes["reassign"].get(name, {}))
    grow = changes["grow"].get(name)
    if grow:
        parts.update(zip(range(len(have["partitions"]), grow["count"]), grow["assignments"], strict=True))
    return parts


def off_balance(current, changes, brokers_by_dc, names):
    """{topic: [the placement rules it breaks]} of the existing topics among names once changes are made.

    After a converge, only rule 3 can be left broken, where mending it would
    copy replicas (a broker just added leads nothing): what balance is for.
    """
    found = {}
    for name in sorted(n for n in names if n in current and n not in changes["delete"]):
        problems = placement.violations(_partitions_after(current[name], changes, name), brokers_by_dc)
        if problems:
            found[name] = problems
    return found


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


# -- a reconcile run against the cluster ---------------------------------------
# admin is a kafka_admin.Admin (or a fake with the same methods in the tests).


def check_brokers(declared, registered):
    """Messages for inventory brokers that are down, unknown, or in another DC."""
    problems = []
    for broker in declared:
        node, dc = int(broker["node_id"]), broker["dc"]
        if node not in registered or registered[node]["fenced"]:
            problems.append(f"broker {node} is not registered and unfenced")
        elif registered[node]["dc"] != dc:
            problems.append(f"broker {node} runs with broker.rack={registered[node]['dc']}, the inventory says {dc}")
    return problems


def retire_refusals(declared, brokers, node_id):
    """Why broker node_id cannot be retired: it is not an inventory broker, or the brokers left cannot
    hold the declared topics by the placement rules (two brokers per DC at least, RF within the brokers).

    declared: normalize()'s result; brokers: the inventory's broker records.
    """
    node_id = int(node_id)
    if node_id not in {int(b["node_id"]) for b in brokers}:
        return [f"broker {node_id} is not one of the inventory's brokers"]
    by_dc = {}
    for broker in brokers:
        by_dc.setdefault(broker["dc"], [])
        if int(broker["node_id"]) != node_id:
            by_dc[broker["dc"]].append(int(broker["node_id"]))
    by_dc = {dc: ids for dc, ids in by_dc.items() if ids}
    problems = []
    for rf in sorted({t["replication_factor"] for t in declared.values()} or {2 * placement.MIN_PER_DC}):
        try:
            placement.check_shape(by_dc, rf)
        except placement.PlacementError as exc:
            names = sorted(n for n, t in declared.items() if t["replication_factor"] == rf)
            problem = f"without broker {node_id}: {exc}"
            if names and "replication factor" in str(exc):
                problem += f" (topics {', '.join(names[:5])})"
            if problem not in problems:
                problems.append(problem)
    return problems


def state_of(current, changes):
    """before/after text of the topics a plan touches, for diff mode."""
    before, after = [], []
    for name in sorted({n for part in changes.values() for n in part}):
        have = current.get(name)
        if have:
            before.append(f"{name}: {dict(sorted(have['partitions'].items()))} {have.get('configs', {})}")
        if name in changes["delete"]:
            continue
        if name in changes["create"]:
            after.append(f"{name}: {changes['create'][name]['assignment']} {changes['create'][name]['configs']}")
            continue
        parts = _partitions_after(have, changes, name)
        configs = {k: v for k, v in have.get("configs", {}).items() if k not in THROTTLE_KEYS}
        change = changes["configs"].get(name, {"set": {}, "delete": []})
        configs.update(change["set"])
        configs = {k: v for k, v in configs.items() if k not in change["delete"]}
        after.append(f"{name}: {dict(sorted(parts.items()))} {configs}")
    return {"before": "\n".join(before) + "\n", "after": "\n".join(after) + "\n"}


def refusals(admin, changes):
    """Send every create, growth and config change with validate_only; return what the cluster refuses."""
    refused = {}
    refused.update(admin.create_topics(changes["create"], validate_only=True))
    refused.update(admin.create_partitions(changes["grow"], validate_only=True))
    refused.update(admin.alter_configs("topic", changes["configs"], validate_only=True))
    return [f"topic '{name}': {why}" for name, why in sorted(refused.items())]


def _restore(before, keys, ours):
    """The change that puts keys back as they were before a move set ours over them."""
    change = {"set": {}, "delete": []}
    for key in keys:
        if key in before:
            if before[key] != ours.get(key):
                change["set"][key] = before[key]
        elif key in ours:
            change["delete"].append(key)
    return change


def throttle_plan(moves, current, broker_ids, rate, broker_configs, topic_configs, cluster_configs=None):
    """What a reassignment sets for its throttle, and what puts back the throttle that was there before.

    broker_configs, topic_configs, cluster_configs: the brokers', the moved
    topics' and the cluster-wide dynamic configs before the move. A recovery
    throttle ("*" replicas, cluster-wide rates) that is on during the move is
    kept: its rates stay, its replica lists are restored.
    Returns {"apply": {"brokers": {...}, "topics": {...}}, "restore": {...}},
    each {name: {"set": {...}, "delete": [...]}}.
    """
    throttled = throttled_replicas(moves, current)
    apply = {"brokers": {}, "topics": {}}
    restore = {"brokers": {}, "topics": {}}
    if not throttled:
        return {"apply": apply, "restore": restore}
    defaults = {k: v for k, v in (cluster_configs or {}).items() if k in RATE_KEYS}
    for broker in broker_ids:
        own = broker_configs.get(broker, {})
        # A rate already set (the recovery throttle, cluster-wide) is the operator's: keep it.
        ours = {k: str(rate) for k in RATE_KEYS if k not in {**defaults, **own}}
        if ours:
            apply["brokers"][broker] = {"set": ours, "delete": []}
            restore["brokers"][broker] = _restore(own, RATE_KEYS, ours)
    for name, keys in throttled.items():
        have = topic_configs.get(name, {})
        if all(have.get(k) == "*" for k in THROTTLE_KEYS):
            continue  # every replica of the topic is throttled already
        apply["topics"][name] = {"set": keys, "delete": []}
        restore["topics"][name] = _restore(have, THROTTLE_KEYS, keys)
    return {"apply": apply, "restore": restore}


def _write(admin, kind, changes, failed):
    """Send one kind of config change; record what the cluster refused in failed; return the names it took."""
    errors = admin.alter_configs(kind, changes)
    failed.update({f"{kind} {name}": why for name, why in errors.items()})
    return [name for name in changes if name not in errors]


def _listed_errors(failed):
    return "; ".join(f"{what}: {why}" for what, why in sorted(failed.items()))


def reassign(admin, changes, current, broker_ids, rate, timeout):
    """Move partitions onto the placement under a throttle, wait, elect, and put the throttle back as it was.

    A throttle the cluster refuses to set stops the run before anything
    moves (what was set is put back); one it refuses to remove fails the run,
    naming where it stays.
    """
    moves = changes["reassign"]
    plan_ = throttle_plan(
        moves,
        current,
        broker_ids,
        rate,
        admin.broker_configs(broker_ids),
        admin.topic_configs(list(moves), keys=THROTTLE_KEYS),
        admin.cluster_configs(),
    )
    failed = {}
    set_brokers = _write(admin, "broker", plan_["apply"]["brokers"], failed)
    set_topics = _write(admin, "topic", plan_["apply"]["topics"], failed) if not failed else []
    if failed:
        undone = {}
        _write(admin, "topic", nonempty({n: plan_["restore"]["topics"][n] for n in set_topics}), undone)
        _write(admin, "broker", nonempty({b: plan_["restore"]["brokers"][b] for b in set_brokers}), undone)
        left = f"; and what was set could not be put back ({_listed_errors(undone)})" if undone else ""
        raise TopicError(
            f"the replication throttle for the move could not be set ({_listed_errors(failed)}); "
            f"nothing was moved{left}"
        )
    refused = admin.reassign(moves)
    if refused:
        raise TopicError(f"the cluster refused reassignments: {refused}")
    partitions = [(name, p) for name, parts in moves.items() for p in parts]
    running = admin.wait_reassignments(partitions, timeout)
    if running:
        raise TopicError(
            f"{len(running)} partition(s) still moving after {timeout} s, e.g. {running[:5]}; "
            "the throttle stays until a later run sees them finish"
        )
    admin.elect_preferred(partitions)
    _write(admin, "topic", nonempty(plan_["restore"]["topics"]), failed)
    _write(admin, "broker", nonempty(plan_["restore"]["brokers"]), failed)
    if failed:
        raise TopicError(
            f"the partitions moved, but the replication throttle they moved under could not be removed "
            f"({_listed_errors(failed)}); it slows replication there until it is: playbooks/quotas.yml puts "
            "the throttle back as declared"
        )
    return partitions


def reconcile(admin, declared, brokers, options, check_mode=False, diff=False):
    """One topics run: read the cluster, plan, let the cluster validate, then change it (unless check_mode).

    declared: normalize()'s result. brokers: the inventory's broker records
    (node_id, dc). options: remove_undeclared, internal_topics, throttle_rate,
    reassignment_timeout, balance (optional, default off). Returns the
    module's result, with "unbalanced" ({topic: [rules it breaks]}: what only
    balance would mend); raises TopicError naming what is refused, before
    anything changes when it can.
    """
    problems = check_brokers(brokers, admin.brokers())
    if problems:
        raise TopicError("topics are reconciled only with every inventory broker up: " + "; ".join(problems))
    ongoing = admin.reassignments()
    if ongoing and not check_mode:
        running = admin.wait_reassignments(list(ongoing), options["reassignment_timeout"])
        if running:
            raise TopicError(f"reassignments already in progress did not finish: {running[:5]}")
    current = admin.topics()
    configs = admin.topic_configs(n for n in current if n in declared)
    for name, values in configs.items():
        current[name]["configs"] = values
    internal = [n for n, t in current.items() if t["internal"]] if options["internal_topics"] else []
    by_dc = {}
    for broker in brokers:
        by_dc.setdefault(broker["dc"], []).append(int(broker["node_id"]))
    balance = bool(options.get("balance"))
    changes = plan(declared, current, by_dc, options["remove_undeclared"], internal=internal, balance=balance)
    result = {
        "changed": not is_empty(changes),
        "changes": summary(changes, current),
        "unbalanced": off_balance(current, changes, by_dc, [*declared, *internal]),
        "reassigned": [],
        "moved_replicas": sum(
            placement.moved_replicas(current[n]["partitions"], moves) for n, moves in changes["reassign"].items()
        ),
    }
    if diff:
        result["diff"] = state_of(current, changes)
    refused = refusals(admin, changes)
    if refused:
        raise TopicError("the cluster refused the declared topics, nothing was changed: " + "; ".join(refused))
    if check_mode or not result["changed"]:
        return result
    errors = admin.create_topics(changes["create"])
    errors.update(admin.alter_configs("topic", changes["configs"]))
    errors.update(admin.create_partitions(changes["grow"]))
    if errors:
        raise TopicError(f"topic changes failed: {errors}")
    if changes["reassign"]:
        broker_ids = [int(b["node_id"]) for b in brokers]
        moved = reassign(admin, changes, current, broker_ids, options["throttle_rate"], options["reassignment_timeout"])
        result["reassigned"] = [f"{t}-{p}" for t, p in moved]
    errors = admin.delete_topics(changes["delete"])
    if errors:
        raise TopicError(f"deleting undeclared topics failed: {errors}")
    return result
