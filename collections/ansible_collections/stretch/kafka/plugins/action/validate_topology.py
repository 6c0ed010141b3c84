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
  - Checks controller DC spread and majority, broker DCs, DC names that differ only in
    case, hosts in two DC groups, node ids, listeners and advertised addresses (what Kafka
    refuses at start, and collisions), overrides of the settings the roles derive,
    replication factors against the broker DCs, min.insync.replicas, data paths and the
    install source. Fails with one line per problem, each naming the host or variable.
  - The topology (node ids, DCs, roles) comes from the node records of every
    host of the two groups, even those left out by C(--limit). Configuration and
    install settings are checked for the hosts in the play, from their
    C(kafka_node_preflight_properties) and C(kafka_node_preflight_install) facts.
options:
  nodes:
    description: The node records of every host of the two groups (the stretch.kafka.node_records filter).
    type: list
    elements: dict
    required: true
  listeners:
    description: kafka_listeners, judged as Kafka would judge them at start.
    type: dict
"""

EXAMPLES = r"""
- name: Validate the inventory
  stretch.kafka.validate_topology:
    nodes: "{{ kafka_nodes }}"
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
        hostvars = task_vars["hostvars"]
        nodes, install = [], {}
        for record in self._task.args.get("nodes") or []:
            hv = hostvars[record["host"]]
            nodes.append(
                dict(
                    record,
                    properties=hv.get("kafka_node_preflight_properties") or {},
                    overrides=hv.get("kafka_node_preflight_overrides") or {},
                )
            )
            if hv.get("kafka_node_preflight_install"):
                install[record["host"]] = hv["kafka_node_preflight_install"]
        errors = topology.validate(nodes, install, task_vars.get("groups"), self._task.args.get("listeners"))
        result["changed"] = False
        if errors:
            result["failed"] = True
            result["errors"] = errors
            result["msg"] = f"inventory refused ({len(errors)} problem(s)):\n- " + "\n- ".join(errors)
        else:
            result["topology"] = topology.summary(nodes)
            result["msg"] = "inventory accepted: " + result["topology"]
        return result
