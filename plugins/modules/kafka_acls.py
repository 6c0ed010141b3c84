"""Ansible module: keep the cluster's ACLs as declared."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_acls
short_description: Keep Kafka's ACLs as declared (deny by default)
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Expands each declaration (a principal, a resource, its operations) into Kafka's ACL
    entries, creates the ones the cluster lacks, and deletes the ones it has that are not
    declared only with I(remove_undeclared).
  - Supports check mode and diff mode.
options:
  acls:
    description:
      - Declared ACLs, each C(principal) (User:name), C(resource) (C(type), C(name), C(pattern)
        literal or prefixed), C(operations), optional C(permission) (allow) and C(host) (*).
    type: list
    elements: dict
    default: []
  remove_undeclared:
    description: Delete the ACLs that are not declared.
    type: bool
    default: false
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Let the etl user read its topics and commit its group's offsets
  stretch.kafka.kafka_acls:
    bootstrap_servers: 10.0.1.11:9091
    acls:
      - {principal: "User:etl", resource: {type: topic, name: orders, pattern: prefixed}, operations: [read, describe]}
      - {principal: "User:etl", resource: {type: group, name: etl-}, operations: [read]}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: One line per ACL added or removed.
  returned: always
  type: list
  elements: str
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402  the documentation blocks come first

from ansible_collections.stretch.kafka.plugins.module_utils import acls, kafka_admin  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "acls": {"type": "list", "elements": "dict", "default": []},
            "remove_undeclared": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    try:
        declared = acls.normalize(module.params["acls"])
    except acls.AclError as exc:
        module.fail_json(msg=str(exc))
    with kafka_admin.session(module) as admin:
        changes = acls.plan(declared, admin.acls(), module.params["remove_undeclared"])
        result = kafka_admin.apply_changes(
            module,
            acls.summary(changes),
            lambda: admin.create_acls(changes["create"]) + admin.delete_acls(changes["delete"]),
            "ACL changes",
        )
    module.exit_json(**result, admin_requests=admin.requests.summary())


if __name__ == "__main__":
    main()
