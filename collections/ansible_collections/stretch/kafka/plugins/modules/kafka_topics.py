"""Ansible module: reconcile the cluster's topics with the declared ones."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_topics
short_description: Create, grow, configure and place Kafka topics as declared
description:
  - Compares the declared topics with the cluster and changes what differs, through
    Kafka's admin protocol from one Python process (kafka-python), with no JVM.
  - New topics get the DC-grouped placement; existing ones are moved onto it with as few
    copied replicas as it can, under a replication throttle that is removed when the move ends.
  - Every create, partition growth and config change is first sent with validate_only, so a
    bad declaration fails the task before anything on the cluster changes.
  - Supports check mode and diff mode.
options:
  brokers:
    description: Every broker of the inventory, as C(node_id) and C(rack); the placement uses these.
    type: list
    elements: dict
    required: true
  topics:
    description: Declared topics, each C(name), C(partitions), optional C(replication_factor) and C(configs).
    type: list
    elements: dict
    default: []
  default_replication_factor:
    description: Replication factor of a topic that does not declare one.
    type: int
    default: 4
  remove_undeclared:
    description: Delete topics that are not declared (internal topics never). Off unless asked for.
    type: bool
    default: false
  internal_topics:
    description: Move the internal topics (C(__consumer_offsets), C(__transaction_state)) onto the placement.
    type: bool
    default: false
  throttle_rate:
    description: Bytes per second each broker may send and receive for a reassignment's copies.
    type: int
    default: 10485760
  reassignment_timeout:
    description: Seconds to wait for a reassignment to finish before failing (the throttle then stays).
    type: int
    default: 1800
  timeout:
    description: Seconds to wait for each admin request.
    type: int
    default: 30
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Reconcile the declared topics
  stretch.kafka.kafka_topics:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
    brokers:
      - {node_id: 101, rack: fra1}
      - {node_id: 102, rack: fra1}
      - {node_id: 201, rack: ams1}
      - {node_id: 202, rack: ams1}
    topics:
      - name: orders
        partitions: 12
        configs: {retention.ms: 604800000, cleanup.policy: delete}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: The plan, one line per change.
  returned: always
  type: list
  elements: str
reassigned:
  description: Partitions moved onto the placement, as topic-partition.
  returned: always
  type: list
  elements: str
moved_replicas:
  description: Replicas that had to be copied to a new broker by the reassignment.
  returned: always
  type: int
"""

import traceback  # noqa: E402  the documentation blocks come first, as in every Ansible module

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import (  # noqa: E402
    kafka_admin,
    placement,
    quotas,
    topics,
)


def brokers_by_dc(brokers):
    grouped = {}
    for broker in brokers:
        grouped.setdefault(broker["rack"], []).append(int(broker["node_id"]))
    return grouped


def check_brokers(declared, registered):
    """Messages for inventory brokers that are down, unknown, or in another rack."""
    problems = []
    for broker in declared:
        node, rack = int(broker["node_id"]), broker["rack"]
        if node not in registered or registered[node]["fenced"]:
            problems.append(f"broker {node} is not registered and unfenced")
        elif registered[node]["rack"] != rack:
            problems.append(
                f"broker {node} runs with broker.rack={registered[node]['rack']}, the inventory says {rack}"
            )
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
        parts = dict(have["partitions"])
        parts.update(changes["reassign"].get(name, {}))
        grow = changes["grow"].get(name)
        if grow:
            parts.update(zip(range(len(have["partitions"]), grow["count"]), grow["assignments"], strict=True))
        configs = {k: v for k, v in have.get("configs", {}).items() if k not in topics.THROTTLE_KEYS}
        change = changes["configs"].get(name, {"set": {}, "delete": []})
        configs.update(change["set"])
        configs = {k: v for k, v in configs.items() if k not in change["delete"]}
        after.append(f"{name}: {dict(sorted(parts.items()))} {configs}")
    return {"before": "\n".join(before) + "\n", "after": "\n".join(after) + "\n"}


def validate(admin, changes):
    """Send every create, growth and config change with validate_only; return the refusals."""
    refusals = {}
    refusals.update(admin.create_topics(changes["create"], validate_only=True))
    refusals.update(admin.create_partitions(changes["grow"], validate_only=True))
    refusals.update(admin.alter_configs("topic", changes["configs"], validate_only=True))
    return [f"topic '{name}': {why}" for name, why in sorted(refusals.items())]


def reassign(admin, module, changes, current, broker_ids):
    """Move partitions onto the placement under a throttle, wait, elect, unthrottle."""
    moves = changes["reassign"]
    throttle = topics.throttled_replicas(moves, current)
    rate = str(module.params["throttle_rate"])
    rates = {b: {"set": dict.fromkeys(quotas.RATE_KEYS, rate)} for b in broker_ids}
    if throttle:
        admin.alter_configs("broker", rates)
        admin.alter_configs("topic", {name: {"set": keys} for name, keys in throttle.items()})
    refused = admin.reassign(moves)
    if refused:
        module.fail_json(msg=f"the cluster refused reassignments: {refused}")
    partitions = [(name, p) for name, parts in moves.items() for p in parts]
    running = admin.wait_reassignments(partitions, module.params["reassignment_timeout"])
    if running:
        module.fail_json(
            msg=f"{len(running)} partition(s) still moving after {module.params['reassignment_timeout']} s, "
            f"e.g. {running[:5]}; the throttle stays until a later run sees them finish"
        )
    admin.elect_preferred(partitions)
    if throttle:
        admin.alter_configs("topic", {name: {"delete": list(topics.THROTTLE_KEYS)} for name in throttle})
        admin.alter_configs("broker", {b: {"delete": list(quotas.RATE_KEYS)} for b in broker_ids})
    return partitions


def run(module, admin, declared):
    params = module.params
    problems = check_brokers(params["brokers"], admin.brokers())
    if problems:
        module.fail_json(msg="topics are reconciled only with every inventory broker up: " + "; ".join(problems))
    ongoing = admin.reassignments()
    if ongoing and not module.check_mode:
        running = admin.wait_reassignments(list(ongoing), params["reassignment_timeout"])
        if running:
            module.fail_json(msg=f"reassignments already in progress did not finish: {running[:5]}")
    current = admin.topics()
    configs = admin.topic_configs(n for n in current if n in declared)
    for name, values in configs.items():
        current[name]["configs"] = values
    internal = [n for n, t in current.items() if t["internal"]] if params["internal_topics"] else []
    changes = topics.plan(
        declared, current, brokers_by_dc(params["brokers"]), params["remove_undeclared"], internal=internal
    )
    result = {
        "changed": not topics.is_empty(changes),
        "changes": topics.summary(changes, current),
        "reassigned": [],
        "moved_replicas": sum(
            placement.moved_replicas(current[n]["partitions"], moves) for n, moves in changes["reassign"].items()
        ),
    }
    if module._diff:  # noqa: SLF001  AnsibleModule's own diff flag
        result["diff"] = state_of(current, changes)
    refusals = validate(admin, changes)
    if refusals:
        module.fail_json(msg="the cluster refused the declared topics, nothing was changed: " + "; ".join(refusals))
    if module.check_mode or not result["changed"]:
        return result
    errors = admin.create_topics(changes["create"])
    errors.update(admin.alter_configs("topic", changes["configs"]))
    errors.update(admin.create_partitions(changes["grow"]))
    if errors:
        module.fail_json(msg=f"topic changes failed: {errors}", **result)
    if changes["reassign"]:
        broker_ids = [int(b["node_id"]) for b in params["brokers"]]
        moved = reassign(admin, module, changes, current, broker_ids)
        result["reassigned"] = [f"{t}-{p}" for t, p in moved]
    errors = admin.delete_topics(changes["delete"])
    if errors:
        module.fail_json(msg=f"deleting undeclared topics failed: {errors}", **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "brokers": {"type": "list", "elements": "dict", "required": True},
            "topics": {"type": "list", "elements": "dict", "default": []},
            "default_replication_factor": {"type": "int", "default": 4},
            "remove_undeclared": {"type": "bool", "default": False},
            "internal_topics": {"type": "bool", "default": False},
            "throttle_rate": {"type": "int", "default": 10485760},
            "reassignment_timeout": {"type": "int", "default": 1800},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    try:
        declared = topics.normalize(module.params["topics"], module.params["default_replication_factor"])
    except topics.TopicError as exc:
        module.fail_json(msg=str(exc))
    admin = kafka_admin.connect(module, module.params["timeout"])
    try:
        module.exit_json(**run(module, admin, declared))
    except topics.TopicError as exc:
        module.fail_json(msg=str(exc))
    except kafka_admin.AdminError as exc:
        module.fail_json(msg=str(exc), exception=traceback.format_exc())
    finally:
        admin.close()


if __name__ == "__main__":
    main()
