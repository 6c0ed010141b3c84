"""Ansible module: reconcile client quotas, and apply or remove the replication throttle."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_quotas
short_description: Keep Kafka's client quotas and the replication throttle as declared
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Compares the declared client quotas (users, client ids, their combinations and defaults)
    with the cluster's and changes what differs, in one batched request, with no JVM.
  - Applies or removes the replication throttle used while a DC recovers, that is its rates
    as cluster-wide defaults (which a broker that starts later applies too) and all replicas
    of every topic; removing it also removes rates set on single brokers.
  - Changes are first sent with validate_only; supports check mode and diff mode.
options:
  quotas:
    description:
      - Declared quotas, each C(entity) (C(user) and/or C(client-id), a name or C(<default>))
        and C(quotas) (C(producer_byte_rate), C(consumer_byte_rate), C(request_percentage),
        C(controller_mutation_rate)).
    type: list
    elements: dict
    default: []
  remove_undeclared:
    description: Remove the quotas of entities that are not declared.
    type: bool
    default: false
  replication_throttle:
    description: C(state) present or absent, and C(rate) in bytes per second; omit to leave it alone.
    type: dict
  timeout:
    description: Seconds to wait for each admin request.
    type: int
    default: 30
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Reconcile quotas and remove any replication throttle
  stretch.kafka.kafka_quotas:
    bootstrap_servers: 10.0.1.11:9092
    quotas:
      - entity: {user: <default>}
        quotas: {producer_byte_rate: 10485760, consumer_byte_rate: 20971520}
      - entity: {client-id: batch-loader}
        quotas: {request_percentage: 50}
    replication_throttle: {state: absent}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: One line per change.
  returned: always
  type: list
  elements: str
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, quotas  # noqa: E402


def describe(kind, changes, label=str):
    return [f"{kind} {label(name)}: set {c['set']}, remove {c['delete']}" for name, c in changes.items()]


def throttle_changes(admin, throttle):
    if not throttle:
        return {"cluster": {"set": {}, "delete": []}, "brokers": {}, "topics": {}}
    brokers = quotas.throttle_brokers(throttle.get("state"), admin.brokers())
    return quotas.throttle_plan(
        throttle.get("state"),
        throttle.get("rate"),
        admin.broker_configs(brokers),
        admin.topic_configs(admin.topics(), keys=quotas.REPLICA_KEYS),
        admin.cluster_configs(),
    )


def cluster_errors(error):
    return {"cluster-wide defaults": error} if error else {}


def run(module, admin, declared):
    params = module.params
    changes = quotas.plan(declared, admin.quotas(), params["remove_undeclared"])
    try:
        throttle = throttle_changes(admin, params["replication_throttle"])
    except quotas.QuotaError as exc:
        module.fail_json(msg=str(exc))
    lines = describe("quota", changes, quotas.entity_label)
    cluster = throttle["cluster"]
    lines += describe("cluster-wide", quotas.nonempty({"defaults": cluster}))
    lines += describe("broker", throttle["brokers"]) + describe("topic", throttle["topics"])
    result = {"changed": bool(lines), "changes": lines}
    if module._diff:  # noqa: SLF001  AnsibleModule's own diff flag
        result["diff"] = {"before": "", "after": "\n".join(lines) + "\n"}
    refused = {quotas.entity_label(k): v for k, v in admin.alter_quotas(changes, validate_only=True).items()}
    refused.update(cluster_errors(admin.alter_cluster_configs(cluster, validate_only=True)))
    refused.update(admin.alter_configs("broker", throttle["brokers"], validate_only=True))
    refused.update(admin.alter_configs("topic", throttle["topics"], validate_only=True))
    if refused:
        module.fail_json(msg=f"the cluster refused the declared quotas, nothing was changed: {refused}")
    if module.check_mode or not lines:
        return result
    errors = {quotas.entity_label(k): v for k, v in admin.alter_quotas(changes).items()}
    errors.update(cluster_errors(admin.alter_cluster_configs(cluster)))
    errors.update(admin.alter_configs("broker", throttle["brokers"]))
    errors.update(admin.alter_configs("topic", throttle["topics"]))
    if errors:
        module.fail_json(msg=f"quota changes failed: {errors}", **result)
    return result


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "quotas": {"type": "list", "elements": "dict", "default": []},
            "remove_undeclared": {"type": "bool", "default": False},
            "replication_throttle": {"type": "dict"},
            "timeout": {"type": "int", "default": 30},
        },
        supports_check_mode=True,
    )
    try:
        declared = quotas.normalize(module.params["quotas"])
        throttle = module.params["replication_throttle"]
        if throttle:
            quotas.throttle_plan(throttle.get("state"), throttle.get("rate"), {}, {})
    except quotas.QuotaError as exc:
        module.fail_json(msg=str(exc))
    with kafka_admin.session(module, module.params["timeout"]) as admin:
        result = run(module, admin, declared)
    module.exit_json(**result, admin_requests=admin.requests.summary())


if __name__ == "__main__":
    main()
