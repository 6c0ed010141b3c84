"""Ansible module: the order a rolling restart visits the nodes in."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_restart_plan
short_description: Order the nodes of a rolling restart, the active controller last
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Asks the cluster which controller leads the quorum, and returns the hosts to restart in
    order, controllers first with the active one last, then the brokers, optionally restricted
    to some DCs or hosts. Reads only.
options:
  controllers:
    description: Inventory records (C(host), C(node_id), C(dc)) of the controllers.
    type: list
    elements: dict
    required: true
  brokers:
    description: Inventory records (C(host), C(node_id), C(dc)) of the brokers.
    type: list
    elements: dict
    required: true
  dcs:
    description: Restart only the nodes of these DCs.
    type: list
    elements: str
    default: []
  hosts:
    description: Restart only these hosts.
    type: list
    elements: str
    default: []
  topics:
    description:
      - Declared topics. The plan then also reads every topic once and returns in C(topics_present) those of
        these the cluster has now, which a converge's restarts can expect their gates to read (it creates the
        others after them). A read that fails fails the plan.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Plan the restart of DC fra1
  stretch.kafka.kafka_restart_plan:
    bootstrap_servers: 10.0.1.11:9092
    controllers: "{{ kafka_quorum_controllers }}"
    brokers: "{{ kafka_broker_records }}"
    dcs: [fra1]
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
order:
  description: Hosts in restart order.
  returned: success
  type: list
  elements: str
topics_present:
  description: Of C(topics), those the cluster had when the plan was made, in their order (only with C(topics)).
  returned: when topics is given
  type: list
  elements: str
active_controller:
  description: The node id of the quorum leader when the plan was made.
  returned: success
  type: int
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import gates, kafka_admin  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "controllers": {"type": "list", "elements": "dict", "required": True},
            "brokers": {"type": "list", "elements": "dict", "required": True},
            "dcs": {"type": "list", "elements": "str", "default": []},
            "hosts": {"type": "list", "elements": "str", "default": []},
            "topics": {"type": "list", "elements": "str", "default": []},
        },
        supports_check_mode=True,
    )
    params = module.params
    with kafka_admin.session(module) as admin:
        leader = admin.quorum()["leader"]
        read = admin.partitions() if params["topics"] else None
    extra = {}
    try:
        order = gates.restart_order(params["controllers"], params["brokers"], leader, params["dcs"], params["hosts"])
        if read is not None:
            extra["topics_present"] = gates.topics_present(params["topics"], *read)
    except gates.GateError as exc:
        module.fail_json(msg=str(exc))
    if not order:
        module.fail_json(msg="the restart selects no node")
    module.exit_json(changed=False, order=order, active_controller=leader, admin_requests=admin.requests.summary(),
                     **extra)  # fmt: skip


if __name__ == "__main__":
    main()
