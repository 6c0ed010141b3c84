"""Action plugin: decide the cluster id and how each node is formatted, once per run.

It runs on the controller (run_once) over what every node reported of its
meta.properties, so a new cluster id is generated in exactly one place.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.stretch.kafka.plugins.module_utils import identity

DOCUMENTATION = r"""
---
module: storage_plan
short_description: Keep the cluster id, and plan the formatting of unformatted nodes
description:
  - Reads every node's meta.properties (as gathered by the play) and returns the
    cluster id to use and the kafka-storage format arguments per unformatted node.
  - A new cluster id and the initial voter set are made only when no controller is formatted.
options:
  nodes:
    description: One entry per node with C(host), C(node_id), C(roles), C(meta) (text or null), C(endpoint).
    type: list
    elements: dict
    required: true
  controllers:
    description: Every controller in the inventory; all must have reported before any node is formatted.
    type: list
    elements: str
    default: []
  brokers:
    description:
      - Every broker in the inventory; all must have reported before the controllers are formatted as a new quorum.
      - Formatted brokers under controllers that have no metadata are refused, never taken for a new cluster.
    type: list
    elements: str
    default: []
  cluster_id:
    description: An operator-chosen cluster id; must match the formatted nodes if any.
    type: str
"""

EXAMPLES = r"""
- name: Plan storage formatting
  stretch.kafka.storage_plan:
    nodes: "{{ ansible_play_hosts | map('extract', hostvars, 'kafka_node_storage_report') }}"
    controllers: "{{ groups['kafka_controllers'] }}"
    brokers: "{{ groups['kafka_brokers'] }}"
    cluster_id: "{{ kafka_cluster_id }}"
  run_once: true
"""

RETURN = r"""
ansible_facts:
  description: C(kafka_node_storage_plan) with cluster_id, bootstrap, initial_controllers, format_args and notes.
  type: dict
  returned: success
"""


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        nodes = [dict(n, meta=identity.parse_meta_properties(n.get("meta"))) for n in self._task.args["nodes"]]
        try:
            plan = identity.storage_plan(
                nodes,
                self._task.args.get("cluster_id") or None,
                self._task.args.get("controllers") or (),
                all_brokers=self._task.args.get("brokers") or (),
            )
        except identity.IdentityError as exc:
            return dict(result, failed=True, changed=False, msg=str(exc))
        for note in plan["notes"]:
            Display().warning(note)
        result.update(changed=False, ansible_facts={"kafka_node_storage_plan": plan})
        return result
