"""The documentation of the validate_topology action, which runs on the controller (plugins/action)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_topology
short_description: "Internal: Refuse an inventory that cannot form a 2.5-DC stretch cluster"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Checks controller DC spread and majority, broker DCs, DC names that differ only in
    case or fall outside letters, digits, C(.), C(_) and C(-), hosts in two DC groups, node
    ids, listeners and advertised addresses (what Kafka refuses at start, collisions, and
    addresses that are no host name), overrides of the settings the roles derive,
    replication factors against the broker DCs, min.insync.replicas (below 2 only by
    opt-in), data paths and the install source. Fails with one line per problem, each
    naming the host or variable.
  - The topology (node ids, DCs, roles) comes from the node records of every
    host of the two groups, even those left out by C(--limit). Configuration and
    install settings are checked for the hosts in the play, from their
    C(kafka_node_preflight_properties) and C(kafka_node_preflight_install) facts.
  - Each broker's limits are held to what the declared topics put on it (its C(kafka_node_preflight_layout)
    fact, module_utils/sizing.py) against its C(kafka_node_preflight_limits) fact - an open-files limit below
    one a log segment and the allowance, or a C(vm.max_map_count) set below two a segment and the allowance -
    naming the node, the limit and both figures.
options:
  nodes:
    description: The node records of every host of the two groups (C(kafka_cluster.nodes), the cluster model's).
    type: list
    elements: dict
    required: true
  listeners:
    description: kafka_listeners, judged as Kafka would judge them at start.
    type: dict
  security:
    description:
      - The security settings to judge together (module_utils/security.py check()); each host's provided
        certificate files come from its C(kafka_node_preflight_tls) fact.
    type: dict
  wan_link:
    description:
      - kafka_wan_link, the link between the broker DCs that the nodes' TCP buffers are sized for; its
        C(bandwidth_mbit) and C(rtt_ms) must each be a positive number.
    type: dict
extends_documentation_fragment:
  - stretch.kafka.min_insync
"""

EXAMPLES = r"""
- name: Validate the inventory
  stretch.kafka.validate_topology:
    nodes: "{{ kafka_cluster.nodes }}"
  run_once: true
"""

RETURN = r"""
topology:
  description: A one-line description of the validated topology.
  type: str
  returned: success
"""
