"""The min.insync.replicas options of the validating actions (validate_topology, validate_declarations)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  min_insync_replicas:
    description:
      - The cluster's C(min.insync.replicas) settings to judge, each variable's name mapped to its value. Below 2 is
        refused unless O(min_insync_replicas_one_opt_in).
    type: dict
    default: {}
  min_insync_replicas_one_opt_in:
    description: C(kafka_min_insync_replicas_one_opt_in), the operator's acceptance of a C(min.insync.replicas) of 1.
    type: bool
    default: false
"""
