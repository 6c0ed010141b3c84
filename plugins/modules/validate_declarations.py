"""The documentation of the validate_declarations action, which runs on the controller (plugins/action)."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: validate_declarations
short_description: "Internal: Refuse declared topics, quotas, a throttle, users or ACLs the cluster could not hold"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Checks each declared topic (name, fields, replication factor against the broker DCs),
    each declared client quota (entity types, keys, values), the replication throttle,
    each declared SCRAM user (name, password length, mechanism), each declared ACL, and the
    C(min.insync.replicas) of each topic and of the settings given (below 2 only by opt-in).
    Fails with one line per problem, naming the topic, quota, user, ACL or variable;
    a message never carries a password.
options:
  nodes:
    description: The node records (C(kafka_cluster.nodes), the cluster model's).
    type: list
    elements: dict
    required: true
  topics:
    description: The declared topics.
    type: list
    elements: dict
    default: []
  replication_factor:
    description: Replication factor of a topic that does not declare one.
    type: int
    default: 4
  quotas:
    description: The declared client quotas.
    type: list
    elements: dict
    default: []
  replication_throttle:
    description: C(state) and C(rate) of the replication throttle.
    type: dict
  users:
    description: The declared SCRAM users (kafka_users).
    type: list
    elements: dict
    default: []
  sasl_mechanism:
    description: The mechanism of a user that names none.
    type: str
    default: SCRAM-SHA-512
  acls:
    description: The declared ACLs, with the roles' own.
    type: list
    elements: dict
    default: []
  cluster_min_insync_replicas:
    description:
      - The cluster-wide min.insync.replicas a converge keeps, which a topic without its own inherits. Every topic's
        own or inherited value must be below its replication factor.
    type: int
extends_documentation_fragment:
  - stretch.kafka.min_insync
"""

EXAMPLES = r"""
- name: Validate the declared topics and quotas
  stretch.kafka.validate_declarations:
    nodes: "{{ kafka_cluster.nodes }}"
    topics: "{{ kafka_topics }}"
    quotas: "{{ kafka_quotas }}"
  run_once: true
"""

RETURN = r"""
errors:
  description: One message per problem.
  type: list
  returned: failure
"""
