"""Ansible module: wait until a rolling-restart health gate passes, or fail naming what blocks it."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_gate
short_description: Poll a health gate of the rolling restart until it passes or times out
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Reads the cluster (partitions and their ISR, min.insync.replicas per topic, registered
    brokers, the KRaft quorum) through Kafka's admin protocol, from one process, and checks
    one gate of module_utils/gates.py against the inventory. Polls until it passes; never
    sleeps a fixed time.
  - Fails closed. What cannot be read (a connection, a topic, a setting, the voters) is a
    problem the gate names, never a pass.
  - The quorum is asked of the controllers themselves (I(bootstrap_controllers)), so
    C(quorum_ready) passes before any broker runs.
  - Never changes anything; runs in check mode too.
options:
  gate:
    description: The gate to check.
    type: str
    required: true
    choices: [broker_down_safe, broker_back, broker_drained, broker_stopped, controller_down_safe, controller_back,
              quorum_ready, cluster_ready, cluster_healthy, topics_writable, dc_lost]
  node_id:
    description: The node being restarted (the node gates).
    type: int
  dc:
    description:
      - The DC a DC gate is about. C(dc_lost) passes once Kafka itself sees the DC gone (its brokers fenced
        or unregistered, its controllers silent and not leading), and returns when it went silent.
    type: str
  nodes:
    description: Every inventory node's record (C(node_id), C(dc), C(roles), C(host)); what the cluster should hold.
    type: list
    elements: dict
    default: []
  topics:
    description: Names of the declared topics; one missing from the cluster's reply fails the gate.
    type: list
    elements: str
    default: []
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
  elr:
    description:
      - Add to the report whether the cluster runs Eligible Leader Replicas (KIP-966) and which partitions hold
        eligible or last-known eligible leader replicas now (DescribeTopicPartitions), read once after the poll.
    type: bool
    default: false
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
report:
  description: Every inventory node, its DC and its state, from the last snapshot read.
  returned: always
  type: list
  elements: str
first_judged_at:
  description: When the first read of the cluster was judged, epoch seconds on the admin runner's clock.
  returned: always
  type: float
last_judged_at:
  description:
    - When the last read was judged, epoch seconds on the admin runner's clock; the moment the gate passed, when it
      passed.
  returned: always
  type: float
polls:
  description: How many times the cluster was read.
  returned: always
  type: int
registered:
  description: The ids of the registered brokers in the last snapshot read; null when they were not read.
  returned: always
  type: list
  elements: int
lost_since:
  description:
    - For C(dc_lost), when the DC went silent in Kafka's own record. That is the last fetch from the quorum's leader
      of the first of its brokers (or controllers) to stop, epoch seconds on the leader's clock as it gives them.
    - Null unless the leader gives a fetch time for every one of them (it drops an observer 300 s after its last
      fetch, and a leader elected after the loss never had them).
  returned: when gate is dc_lost
  type: float
lost_by:
  description:
    - For C(dc_lost), a bound of C(lost_since) when that is null, the earliest fetch time the leader still gives
      for one of the DC's brokers (or controllers); null when it gives none.
  returned: when gate is dc_lost
  type: float
admin_requests:
  description: The requests sent to Kafka, in all and by API, as kafka-python records each (connections' own too).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import gates, kafka_admin, nodes  # noqa: E402


def expected_from(records, topics):
    return {
        "controllers": nodes.dcs_of(nodes.with_role(records, "controller")),
        "brokers": nodes.dcs_of(nodes.with_role(records, "broker")),
        "topics": list(topics),
    }


def eligibility(admin):
    """(the cluster's finalized features, every partition's eligible leader replicas), or (None, None) when
    either could not be read: reported as unread, never as "none held"."""
    try:
        return admin.finalized_features(), admin.eligible_leaders()
    except Exception:  # noqa: BLE001  reported as unread
        return None, None


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "gate": {"type": "str", "required": True, "choices": list(gates.GATES)},
            "node_id": {"type": "int"},
            "dc": {"type": "str"},
            "nodes": {"type": "list", "elements": "dict", "default": []},
            "topics": {"type": "list", "elements": "str", "default": []},
            "timeout": {"type": "int", "default": 300},
            "interval": {"type": "float", "default": 2},
            "max_lag": {"type": "int", "default": 0},
            "wait": {"type": "bool", "default": True},
            "elr": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
        required_if=[("gate", g, ["node_id"]) for g in gates.NODE_GATES]
        + [("gate", g, ["dc"]) for g in gates.DC_GATES],
    )
    kafka_admin.require(module)
    params = module.params
    admin = kafka_admin.Admin(
        params["bootstrap_servers"], params["client_config"], timeout=15,
        bootstrap_controllers=params["bootstrap_controllers"],
    )  # fmt: skip
    parts = gates.parts_needed(params["gate"])
    expected = expected_from(params["nodes"], params["topics"])
    subject = params["dc"] if params["gate"] in gates.DC_GATES else params["node_id"]
    features = eligible = None
    try:
        outcome = gates.poll(
            lambda: admin.snapshot(parts),
            params["gate"],
            expected,
            subject,
            params["max_lag"],
            params["timeout"],
            params["interval"],
            params["wait"],
        )
        if params["elr"]:
            features, eligible = eligibility(admin)
    finally:
        admin.close()
    snapshot = outcome.pop("snapshot") or {}
    result = {
        "changed": False,
        **outcome,
        "report": (gates.report(snapshot, params["nodes"]) if params["nodes"] else [])
        + (gates.elr_report(features, eligible) if params["elr"] else []),
        "registered": gates.registered(snapshot),
        "admin_requests": admin.requests.summary(),
    }
    if params["gate"] == "dc_lost":
        result["lost_since"] = gates.lost_since(snapshot, expected, params["dc"])
        result["lost_by"] = gates.lost_by(snapshot, expected, params["dc"])
    if not outcome["passed"] and params["wait"]:
        where = f" for {'DC' if params['gate'] in gates.DC_GATES else 'node'} {subject}" if subject is not None else ""
        module.fail_json(
            msg=f"gate {params['gate']}{where} still blocked after {outcome['waited']} s: "
            + "; ".join(outcome["problems"]),
            **result,
        )
    module.exit_json(**result)


if __name__ == "__main__":
    main()
