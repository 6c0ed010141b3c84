"""Ansible module: refuse a release older than the features the cluster has finalized, before any node changes."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_release_guard
short_description: "Internal: Refuse a release older than the features the running cluster has finalized"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Judges, before any node changes, whether the release each node is about to run can read the cluster's
    finalized C(metadata.version) (module_utils/features.py, C(release_guard)).
  - Reads the finalized features over the admin protocol (DescribeFeatures) from any broker that answers, and
    refuses every node whose release changes (its C(current) link differs or is missing) to one older than the
    finalized C(metadata.version), whichever host is first in the inventory.
  - When the features cannot be read, or carry a level this collection does not know, and any of I(nodes) was
    formatted, every release change is refused. A cluster none of whose nodes was formatted and none of whose
    brokers answers is new; with no release changing there is nothing to refuse.
  - Reads only; supports check mode.
options:
  nodes:
    description:
      - Every Kafka node of the run, each with C(host), C(formatted) (its C(meta.properties) exists), C(current)
        (the release directory its C(current) link names, empty for none), C(release) (the release directory
        this run installs) and C(version) (its C(kafka_node_version)).
    type: list
    elements: dict
    required: true
  timeout:
    description: Seconds the read of the features may take.
    type: int
    default: 15
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Refuse a release older than the cluster's finalized features
  stretch.kafka.kafka_release_guard:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
    nodes:
      - {host: dc1-broker0, formatted: false, current: "", release: /opt/kafka/kafka_2.13-4.2.0, version: 4.2.0}
      - {host: dc1-broker1, formatted: true, current: /opt/kafka/kafka_2.13-4.3.1,
         release: /opt/kafka/kafka_2.13-4.2.0, version: 4.2.0}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
read:
  description: Whether the finalized features were read.
  returned: always
  type: bool
finalized:
  description: The cluster's finalized feature levels, by feature; null when not read.
  returned: always
  type: dict
refusals:
  description: Why the run may not change the releases it changes; empty when it may.
  returned: always
  type: list
  elements: str
notes:
  description: What the guard could not read or did not need to, when that refuses nothing.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import features, kafka_admin  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "nodes": {"type": "list", "elements": "dict", "required": True},
            "timeout": {"type": "int", "default": 15},
        },
        supports_check_mode=True,
    )
    kafka_admin.require(module)
    params = module.params
    admin = kafka_admin.Admin(params["bootstrap_servers"], params["client_config"], params["timeout"])
    try:
        guard = features.release_guard(params["nodes"], admin.finalized_features)
    finally:
        admin.close()
    if guard["refusals"]:
        module.fail_json(msg="; ".join(guard["refusals"]), changed=False, **guard)
    module.exit_json(changed=False, **guard)


if __name__ == "__main__":
    main()
