"""Ansible module: wait until a rolling-restart health gate passes, or fail naming what blocks it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_gate
short_description: Poll a health gate of the rolling restart until it passes or times out
description:
  - Reads the cluster (partitions and their ISR, min.insync.replicas per topic, registered
    brokers, the KRaft quorum) through Kafka's admin protocol, from one process, and checks
    one gate of module_utils/gates.py. Polls until it passes; never sleeps a fixed time.
  - Never changes anything; runs in check mode too.
options:
  gate:
    description: The gate to check.
    type: str
    required: true
    choices: [broker_down_safe, broker_back, controller_down_safe, controller_back, cluster_healthy, writable]
  node_id:
    description: The node being restarted.
    type: int
  timeout:
    description: Seconds to keep polling before failing.
    type: int
    default: 300
  interval:
    description: Seconds between polls.
    type: float
    default: 2
  max_lag:
    description: Records a voter may lag the quorum leader and still count as caught up.
    type: int
    default: 0
  wait:
    description: When false, check once and report without failing (for a dry run).
    type: bool
    default: true
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Wait until broker 101 can go down without any partition going under min ISR
  stretch.kafka.kafka_gate:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
    gate: broker_down_safe
    node_id: 101
    timeout: 600
  delegate_to: localhost
"""

RETURN = r"""
passed:
  description: Whether the gate passed.
  returned: always
  type: bool
problems:
  description: What the last poll saw blocking the gate (empty when it passed).
  returned: always
  type: list
  elements: str
waited:
  description: Seconds spent polling.
  returned: always
  type: float
polls:
  description: How many times the cluster was read.
  returned: always
  type: int
"""

import time  # noqa: E402  the documentation blocks come first, as in every Ansible module

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import gates, kafka_admin  # noqa: E402


def poll(read, gate, node, max_lag, timeout, interval, wait, clock=time.monotonic, sleep=time.sleep):
    """Check the gate until it passes, or until timeout; returns (passed, problems, waited, polls)."""
    start = clock()
    polls = 0
    while True:
        polls += 1
        try:
            problems = gates.check(gate, read(), node, max_lag)
        except gates.GateError:
            raise
        except Exception as exc:  # noqa: BLE001  an unreachable cluster is a failed poll, not a crash
            problems = [f"cannot read the cluster: {exc}"]
        waited = clock() - start
        if not problems or not wait or waited >= timeout:
            return not problems, problems, round(waited, 1), polls
        sleep(interval)


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "gate": {"type": "str", "required": True, "choices": list(gates.GATES)},
            "node_id": {"type": "int"},
            "timeout": {"type": "int", "default": 300},
            "interval": {"type": "float", "default": 2},
            "max_lag": {"type": "int", "default": 0},
            "wait": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
        required_if=[("gate", g, ["node_id"]) for g in gates.GATES if g not in ("cluster_healthy", "writable")],
    )
    kafka_admin.require(module)
    params = module.params
    admin = None

    def read():
        nonlocal admin
        if admin is None:
            admin = kafka_admin.Admin(params["bootstrap_servers"], params["client_config"], timeout=15)
        return admin.snapshot()

    try:
        passed, problems, waited, polls = poll(
            read, params["gate"], params["node_id"], params["max_lag"], params["timeout"], params["interval"],
            params["wait"],
        )  # fmt: skip
    finally:
        if admin is not None:
            admin.close()
    result = {"changed": False, "passed": passed, "problems": problems, "waited": waited, "polls": polls}
    if not passed and params["wait"]:
        where = f" for node {params['node_id']}" if params["node_id"] is not None else ""
        module.fail_json(
            msg=f"gate {params['gate']}{where} still blocked after {waited} s: " + "; ".join(problems), **result
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
