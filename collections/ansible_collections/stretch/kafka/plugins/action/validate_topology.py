"""Action plugin: validate the stretch-cluster inventory on the controller.

It never connects to a host: it reads node ids, racks and group membership
from the inventory, and the configuration the preflight tasks composed.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.stretch.kafka.plugins.module_utils import topology

DOCUMENTATION = r"""
---
module: validate_topology
short_description: Refuse an inventory that cannot form a 2.5-DC stretch cluster
description:
  - Checks controller DC spread and majority, broker DCs and racks, node ids,
    replication factors against the broker DCs, min.insync.replicas, and the
    install source. Fails with one line per problem, each naming the host or variable.
  - The topology (node ids, racks, roles) is read from the inventory for every
    host of the two groups, even those left out by C(--limit). Configuration and
    install settings are checked for the hosts in the play, from their
    C(kafka_preflight_properties) and C(kafka_preflight_install) facts.
options:
  controllers:
    description: The hosts of the controllers group.
    type: list
    elements: str
    required: true
  brokers:
    description: The hosts of the brokers group.
    type: list
    elements: str
    required: true
  topics:
    description: The declared topics (kafka_topics), checked against the brokers' DCs.
    type: list
    elements: dict
    default: []
  replication_factor:
    description: Replication factor of a topic that does not declare one.
    type: int
    default: 4
  quotas:
    description: The declared client quotas (kafka_quotas).
    type: list
    elements: dict
    default: []
  replication_throttle:
    description: C(state) and C(rate) of the replication throttle.
    type: dict
"""

EXAMPLES = r"""
- name: Validate the inventory
  stretch.kafka.validate_topology:
    controllers: "{{ groups['kafka_controllers'] }}"
    brokers: "{{ groups['kafka_brokers'] }}"
  run_once: true
"""

RETURN = r"""
topology:
  description: A one-line description of the validated topology.
  type: str
  returned: success
"""


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        controllers = list(self._task.args.get("controllers") or [])
        brokers = list(self._task.args.get("brokers") or [])
        hostvars = task_vars["hostvars"]
        nodes, install = [], {}
        for host in dict.fromkeys(controllers + brokers):
            hv = hostvars[host]
            nodes.append(
                {
                    "host": host,
                    "node_id": hv.get("kafka_node_id"),
                    "rack": hv.get("kafka_rack"),
                    "roles": [r for r, group in (("broker", brokers), ("controller", controllers)) if host in group],
                    "properties": hv.get("kafka_preflight_properties") or {},
                }
            )
            if hv.get("kafka_preflight_install"):
                install[host] = hv["kafka_preflight_install"]
        errors = topology.validate(nodes, install)
        if not errors:
            args = self._task.args
            errors = topology.check_declarations(
                nodes,
                args.get("topics") or [],
                int(args.get("replication_factor", 4)),
                args.get("quotas") or [],
                args.get("replication_throttle"),
            )
        result["changed"] = False
        if errors:
            result["failed"] = True
            result["errors"] = errors
            result["msg"] = f"inventory refused ({len(errors)} problem(s)):\n- " + "\n- ".join(errors)
        else:
            result["topology"] = topology.summary(nodes)
            result["msg"] = "inventory accepted: " + result["topology"]
        return result
