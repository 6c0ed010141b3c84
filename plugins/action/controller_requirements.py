"""Action plugin: controller_requirements, read in Ansible's own process where the module would run there anyway.

Preflight asks it of the admin runner, by default this controller with Ansible's own Python
(kafka_adminclient_host localhost, kafka_adminclient_python ansible_playbook_python): there the module would
start a second copy of this Python to read this Python's packages. On a local connection whose interpreter is
exactly this process's executable, the same reads (module_utils/requirements.py) are made here instead; anywhere
else, or when either cannot be told, the module runs on the host with the Python the task names.
"""

from __future__ import annotations

import os
import sys

from ansible.plugins.action import ActionBase

from ansible_collections.stretch.kafka.plugins.module_utils import requirements

# Its options and return values are documented in plugins/modules/controller_requirements.py.
LOCAL = ("local", "ansible.builtin.local")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _interpreter(self, task_vars):
        """The Python the module would run with on the task's host, or None when it cannot be told."""
        host_vars = task_vars
        if self._task.delegate_to:
            host_vars = (task_vars.get("ansible_delegated_vars") or {}).get(self._task.delegate_to)
        if not host_vars or "ansible_python_interpreter" not in host_vars:
            return None
        value = self._templar.template(host_vars["ansible_python_interpreter"])
        return value if isinstance(value, str) else None

    def _in_this_process(self, task_vars):
        return self._connection.transport in LOCAL and self._interpreter(task_vars) == sys.executable

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        if not self._in_this_process(task_vars or {}):
            result.update(self._execute_module(module_args=self._task.args, task_vars=task_vars))
            return result
        args = self.validate_argument_spec(argument_spec=requirements.ARGUMENT_SPEC)[1]
        found, refused = requirements.judge(sys.executable, os.uname().nodename, args["packages"], args["commands"])
        result.update(changed=False, found=found, python=sys.executable)
        if refused:
            return dict(result, failed=True, msg="; ".join(refused))
        return result
