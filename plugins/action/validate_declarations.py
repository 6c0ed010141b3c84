"""Action plugin: refuse declared topics, quotas or a throttle that the cluster could not hold.

It never connects to a host: each topic's replication factor is judged
against the broker DCs of the inventory's node records.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.stretch.kafka.plugins.module_utils import topology

# Its options and return values are documented in plugins/modules/validate_declarations.py.


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = self._task.args
        errors = topology.check_declarations(
            args.get("nodes") or [],
            args.get("topics") or [],
            int(args.get("replication_factor", 4)),
            args.get("quotas") or [],
            args.get("replication_throttle"),
            users=args.get("users") or [],
            acl_list=args.get("acls") or [],
            mechanism=args.get("sasl_mechanism"),
            min_insync_replicas=args.get("min_insync_replicas"),
            min_insync_opt_in=args.get("min_insync_replicas_one_opt_in", False),
            cluster_min_insync_replicas=args.get("cluster_min_insync_replicas"),
        )
        result["changed"] = False
        if errors:
            result.update(
                failed=True,
                errors=errors,
                msg=f"declarations refused ({len(errors)} problem(s)):\n- " + "\n- ".join(errors),
            )
        else:
            result["msg"] = "declarations accepted"
        return result
