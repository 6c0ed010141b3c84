"""Action plugin: validate the stretch-cluster inventory on the controller.

It never connects to a host: it only reads the per-node summaries that the
preflight tasks assembled from the inventory.
"""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_topology
short_description: Refuse an inventory that cannot form a 2.5-DC stretch cluster
description:
  - Checks controller DC spread and majority, broker DCs and racks, node ids,
    replication factors against the broker DCs, min.insync.replicas, and the
    install source. Fails with one line per problem, each naming the host or variable.
options:
  nodes:
    description: One entry per node with C(host), C(node_id), C(rack), C(roles) and C(properties).
    type: list
    elements: dict
    required: true
  install:
    description: Per-host install source, C({host: {src, url, checksum}}).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Validate the inventory
  stretch.kafka.validate_topology:
    nodes: "{{ ansible_play_hosts_all | map('extract', hostvars, 'kafka_preflight_node') }}"
  run_once: true
"""

RETURN = r"""
topology:
  description: A one-line description of the validated topology.
  type: str
  returned: success
"""

from ansible.plugins.action import ActionBase
from ansible_collections.stretch.kafka.plugins.module_utils import topology


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        nodes = args.get("nodes") or []
        errors = topology.validate(nodes, args.get("install") or {})
        result["changed"] = False
        if errors:
            result["failed"] = True
            result["errors"] = errors
            result["msg"] = f"inventory refused ({len(errors)} problem(s)):\n- " + "\n- ".join(errors)
        else:
            result["topology"] = topology.summary(nodes)
            result["msg"] = "inventory accepted: " + result["topology"]
        return result
