"""Ansible module: keep cluster-wide dynamic broker configs (such as min.insync.replicas) as declared."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_cluster_settings
short_description: Keep cluster-wide dynamic broker configs, such as min.insync.replicas, as declared
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Reads the cluster-wide default of the brokers' dynamic configs (the broker resource with
    an empty name) and sets the declared keys whose value differs, with one incremental
    request. Keys that are not declared are left alone.
  - With Eligible Leader Replicas (on by default in new 4.x clusters) the controllers apply
    the cluster-wide C(min.insync.replicas) to every partition, so this, not
    C(server.properties), is what the cluster enforces.
  - The change is first sent with validate_only. Supports check mode and diff mode.
options:
  settings:
    description: The cluster-wide configs to keep, key to value.
    type: dict
    required: true
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Enforce min.insync.replicas=2 cluster-wide
  stretch.kafka.kafka_cluster_settings:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
    settings:
      min.insync.replicas: 2
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: One line per key set.
  returned: always
  type: list
  elements: str
before:
  description: The cluster-wide dynamic configs before the run.
  returned: always
  type: dict
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import cluster_settings, kafka_admin  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={**kafka_admin.ARGUMENT_SPEC, "settings": {"type": "dict", "required": True}},
        supports_check_mode=True,
    )
    try:
        declared = cluster_settings.normalize(module.params["settings"])
    except cluster_settings.SettingsError as exc:
        module.fail_json(msg=str(exc))
    with kafka_admin.session(module) as admin:
        current = admin.cluster_configs()
        change = cluster_settings.plan(declared, current)
        lines = [f"cluster-wide {k}: {current.get(k, '(unset)')} -> {v}" for k, v in change["set"].items()]
        result = {"changed": bool(lines), "changes": lines, "before": current}
        if module._diff:  # noqa: SLF001  AnsibleModule's own diff flag
            result["diff"] = {
                "before": "".join(f"{k}={current[k]}\n" for k in sorted(declared) if k in current),
                "after": "".join(f"{k}={v}\n" for k, v in sorted(declared.items())),
            }
        if lines:
            refused = admin.alter_cluster_configs(change, validate_only=True)
            if refused:
                module.fail_json(msg=f"the cluster refused the cluster-wide settings {change['set']}: {refused}")
            if not module.check_mode:
                failed = admin.alter_cluster_configs(change)
                if failed:
                    module.fail_json(msg=f"setting {change['set']} cluster-wide failed: {failed}", **result)
    module.exit_json(**result, admin_requests=admin.requests.summary())


if __name__ == "__main__":
    main()
