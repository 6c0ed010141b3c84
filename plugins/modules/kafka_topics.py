"""Ansible module: reconcile the cluster's topics with the declared ones."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_topics
short_description: Create, grow, configure and place Kafka topics as declared
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Compares the declared topics with the cluster and changes what differs, through
    Kafka's admin protocol from one Python process (kafka-python), with no JVM.
  - New topics get the DC-grouped placement, laid out against what the other topics put on the
    brokers. An existing topic is only repaired. A partition whose list meets the placement's rules
    keeps its replicas, whatever the other topics hold; one that breaks them is moved onto them
    with as few copied replicas as it can, under a replication throttle that is removed when the
    move ends. Balancing existing topics (moving replicas of partitions that meet the rules, as
    onto a broker just added) happens only with O(balance); without it, a topic only balancing
    would mend is named in a warning and in RV(unbalanced).
  - Every create, partition growth and config change is first sent with validate_only, so a
    bad declaration fails the task before anything on the cluster changes.
  - Supports check mode and diff mode.
options:
  brokers:
    description: Every broker of the inventory, as its node record (C(node_id) and C(dc)); the placement uses these.
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
  balance:
    description:
      - Balance the existing topics as well, each DC's brokers evened out and the topic laid out against the
        rest of the cluster, with as few copies as it can. It copies replicas of partitions that meet the rules,
        so run it in check mode first to see the moves.
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
      - {node_id: 101, dc: fra1}
      - {node_id: 102, dc: fra1}
      - {node_id: 201, dc: ams1}
      - {node_id: 202, dc: ams1}
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
unbalanced:
  description: The existing topics that still break a placement rule only balancing mends, with the rules they break.
  returned: always
  type: dict
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  the documentation blocks come first, as in every Ansible module

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, topics  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "brokers": {"type": "list", "elements": "dict", "required": True},
            "topics": {"type": "list", "elements": "dict", "default": []},
            "default_replication_factor": {"type": "int", "default": 4},
            "remove_undeclared": {"type": "bool", "default": False},
            "internal_topics": {"type": "bool", "default": False},
            "balance": {"type": "bool", "default": False},
            "throttle_rate": {"type": "int", "default": 10485760},
            "reassignment_timeout": {"type": "int", "default": 1800},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    params = module.params
    try:
        declared = topics.normalize(params["topics"], params["default_replication_factor"])
    except topics.TopicError as exc:
        module.fail_json(msg=str(exc))
    keys = ("remove_undeclared", "internal_topics", "throttle_rate", "reassignment_timeout", "balance")
    options = {k: params[k] for k in keys}
    with kafka_admin.session(module, params["timeout"]) as admin:
        try:
            result = topics.reconcile(admin, declared, params["brokers"], options, module.check_mode, module._diff)  # noqa: SLF001
        except topics.TopicError as exc:
            module.fail_json(msg=str(exc))
    result["admin_requests"] = admin.requests.summary()
    for name, problems in result["unbalanced"].items():
        module.warn(
            f"topic {name}: {'; '.join(problems)}. A converge copies no replica to mend this; balancing does: "
            "-e kafka_admin_balance_topics=true, with --check --diff first to see the moves"
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
