"""Ansible module: give every partition back to its preferred leader."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_leaders
short_description: Elect the preferred leader of every partition that is led by another replica
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Reads every partition's leader over the admin protocol and runs one preferred leader
    election for the partitions whose leader is not the first replica of their list. A
    partition whose preferred leader cannot take over (out of sync, down) fails the task,
    named with the reason; the others are moved all the same.
  - Changes nothing when every partition is led by its preferred leader. Supports check mode.
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Give leadership back to the preferred leaders
  stretch.kafka.kafka_leaders:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
elected:
  description: Partitions whose leadership was asked to move, as topic-partition.
  returned: always
  type: list
  elements: str
failed:
  description: Partitions whose preferred leader could not be elected, with the reason.
  returned: always
  type: list
  elements: str
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=dict(kafka_admin.ARGUMENT_SPEC), supports_check_mode=True)
    with kafka_admin.session(module) as admin:
        if module.check_mode:
            due = [f"{topic}-{p}" for topic, p in admin.not_preferred()]
            module.exit_json(changed=bool(due), elected=due, failed=[], admin_requests=admin.requests.summary())
        elected, failed = admin.elect_preferred_everywhere()
    if failed:
        module.fail_json(
            msg=f"{len(failed)} partition(s) could not move to their preferred leader: " + "; ".join(failed[:10]),
            changed=bool(elected), elected=elected, failed=failed,
        )  # fmt: skip
    module.exit_json(changed=bool(elected), elected=elected, failed=failed, admin_requests=admin.requests.summary())


if __name__ == "__main__":
    main()
