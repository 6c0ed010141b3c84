"""Ansible module: the topics' own min.insync.replicas a DC failover relaxes, and its recovery puts back."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_min_isr
short_description: "Internal: Plan the min.insync.replicas a DC failover relaxes, or set topics' own values"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - With I(lost_brokers), plans a failover (module_utils/failover.py) and changes nothing. Reads every topic,
    internal ones included, its partitions' replicas and its effective C(min.insync.replicas) (its own, or the
    cluster-wide one), and returns the topics whose own value is above I(target), to be lowered to it, and the
    value each topic runs with once the failover is done. Fails, naming them, when a topic would stay
    unwritable all the same (fewer replicas outside the lost DC than that value), since nothing may be relaxed
    then.
    A reply that misses a topic or carries an error fails closed, naming the topic.
  - With I(values), sets each topic's own C(min.insync.replicas) to the value given, first with validate_only,
    and only where it differs (with Eligible Leader Replicas every update clears the topic's ELR). A topic that
    no longer exists is reported in C(gone), not set. Supports check mode.
options:
  lost_brokers:
    description: The lost DC's broker ids; plans a failover.
    type: list
    elements: int
  target:
    description: The C(min.insync.replicas) the cluster runs with while the DC is lost.
    type: int
  cluster_relaxed:
    description: Whether the failover lowers the cluster-wide C(min.insync.replicas) to I(target).
    type: bool
    default: false
  dc:
    description: The lost DC's name, for the messages.
    type: str
    default: the DC
  values:
    description: Topic to the C(min.insync.replicas) of its own to set.
    type: dict
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Plan what a failover of dc2 relaxes
  stretch.kafka.kafka_min_isr:
    bootstrap_servers: 10.0.1.11:9092
    lost_brokers: [201, 202]
    target: 2
    cluster_relaxed: true
    dc: dc2
  register: plan
  delegate_to: localhost
  run_once: true

- name: Put back the topics' own values a failover lowered
  stretch.kafka.kafka_min_isr:
    bootstrap_servers: 10.0.1.11:9092
    values:
      strict: 3
      __transaction_state: 3
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
relax:
  description: Planning, each topic whose own value is lowered, with that value now (what a recovery puts back).
  returned: with lost_brokers
  type: dict
lower:
  description: Planning, each topic whose own value is lowered, with the value it is lowered to.
  returned: with lost_brokers
  type: dict
after:
  description: Planning, the C(min.insync.replicas) each topic runs with once the failover is done.
  returned: with lost_brokers
  type: dict
unwritable:
  description: Planning, why each topic that would stay unwritable would.
  returned: with lost_brokers
  type: list
  elements: str
transactions:
  description: Planning, whether C(__transaction_state) is among the topics relaxed.
  returned: with lost_brokers
  type: bool
changes:
  description: Setting, one line per topic set.
  returned: with values
  type: list
  elements: str
gone:
  description: Setting, the topics given that no longer exist.
  returned: with values
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import failover, kafka_admin  # noqa: E402

UNKNOWN_TOPIC = 3


def plan(module, admin):
    params = module.params
    try:
        topics = admin.topics()
        min_isr = failover.effective_min_isr(admin.topic_config_replies(topics), topics)
    except failover.FailoverError as exc:
        module.fail_json(msg=str(exc))
    found = failover.plan(topics, min_isr, params["lost_brokers"], params["target"], params["cluster_relaxed"],
                          params["dc"])  # fmt: skip
    refused = failover.refusal(found, params["dc"], params["target"])
    if refused:
        module.fail_json(msg=refused, changed=False, **found)
    module.exit_json(changed=False, **found)


def set_values(module, admin):
    wanted = {str(k): int(v) for k, v in module.params["values"].items()}
    replies = {r["name"]: r for r in admin.topic_config_replies(wanted)}
    gone = sorted(n for n in wanted if replies.get(n, {}).get("error_code") == UNKNOWN_TOPIC)
    try:
        now = failover.effective_min_isr([r for n, r in replies.items() if n not in gone], set(wanted) - set(gone))
    except failover.FailoverError as exc:
        module.fail_json(msg=str(exc))
    changes = {n: v for n, v in sorted(wanted.items()) if n not in gone and (not now[n]["own"] or now[n]["value"] != v)}
    lines = [
        f"topic {n}: min.insync.replicas {now[n]['value']}{'' if now[n]['own'] else ' (not its own)'} -> {v}"
        for n, v in changes.items()
    ]
    request = {n: {"set": {failover.MIN_ISR: str(v)}} for n, v in changes.items()}
    refused = admin.alter_configs("topic", request, validate_only=True) if request else {}
    if refused:
        module.fail_json(msg=f"the cluster refused {failover.MIN_ISR} for {refused}", changes=lines, gone=gone)
    result = kafka_admin.apply_changes(module, lines, lambda: admin.alter_configs("topic", request), "the values")
    module.exit_json(**result, gone=gone)


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "lost_brokers": {"type": "list", "elements": "int"},
            "target": {"type": "int"},
            "cluster_relaxed": {"type": "bool", "default": False},
            "dc": {"type": "str", "default": "the DC"},
            "values": {"type": "dict"},
        },
        supports_check_mode=True,
        required_one_of=[("lost_brokers", "values")],
        mutually_exclusive=[("lost_brokers", "values")],
        required_by={"lost_brokers": ("target",)},
    )
    with kafka_admin.session(module) as admin:
        (plan if module.params["lost_brokers"] is not None else set_values)(module, admin)


if __name__ == "__main__":
    main()
