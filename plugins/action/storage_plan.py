"""Action plugin: decide the cluster id and how each node is formatted, once per run.

It runs on the controller (run_once) over what every node reported of its
meta.properties, so a new cluster id is generated in exactly one place.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.stretch.kafka.plugins.module_utils import identity

# Its options and return values are documented in plugins/modules/storage_plan.py.


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
