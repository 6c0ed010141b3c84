"""Ansible module: refuse a Python or host that lacks what the run's tasks there need."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: controller_requirements
short_description: Refuse a Python or host that lacks the packages and commands a playbook's tasks there need
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Reads the versions of Python packages installed for the Python the module runs with, and whether commands
    exist and are executable, and fails naming each missing or out-of-range one with the command that installs it.
  - Preflight runs it on the admin runner (O(stretch.kafka.kafka#role:main:kafka_adminclient_host), by default the
    Ansible controller) for the admin-protocol modules' kafka-python, and on the smoke test's runner for
    spark-submit and Java, before the run changes anything. Reads only; reports C(changed=false).
  - On a local connection whose Python is exactly the one Ansible runs with (the admin runner's default), its
    action makes the same reads in Ansible's own process instead of starting the module in a second copy of that
    Python; its result then carries no C(invocation).
options:
  packages:
    description: Python packages, each with a version range and what needs it.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The distribution's name (C(kafka-python)).
        type: str
        required: true
      specifier:
        description: The version range, release segments only (C(>=3.0.12,<4)); empty for any.
        type: str
        default: ""
      for:
        description: What needs it, for the message.
        type: str
        default: the run
  commands:
    description: Executables that must exist, each with what needs it.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The command's name, for the message.
        type: str
        required: true
      path:
        description: Its path; a bare name is looked up on the PATH.
        type: str
        required: true
      for:
        description: What needs it, for the message.
        type: str
        default: the run
"""

EXAMPLES = r"""
- name: Refuse a controller without kafka-python
  stretch.kafka.controller_requirements:
    packages:
      - name: kafka-python
        specifier: ">=3.0.12,<4"
        for: the admin-protocol modules
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
found:
  description: The installed version of each package asked for (null when it is not installed).
  returned: always
  type: dict
python:
  description: The Python the module ran with.
  returned: always
  type: str
"""

import os  # noqa: E402  the documentation blocks come first, as in every Ansible module
import sys  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import requirements  # noqa: E402


def main():
    module = AnsibleModule(argument_spec=requirements.ARGUMENT_SPEC, supports_check_mode=True)
    found, refused = requirements.judge(sys.executable, os.uname().nodename, module.params["packages"],
                                        module.params["commands"])  # fmt: skip
    if refused:
        module.fail_json(msg="; ".join(refused), found=found, python=sys.executable)
    module.exit_json(changed=False, found=found, python=sys.executable)


if __name__ == "__main__":
    main()
