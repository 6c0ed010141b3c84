"""The documentation of the storage_plan action, which runs on the controller (plugins/action)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: storage_plan
short_description: "Internal: Keep the cluster id, and plan the formatting of unformatted nodes"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
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
