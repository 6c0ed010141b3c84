"""Ansible module: wait until every partition of the probe topic acknowledges an acks=all write."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_probe
short_description: Prove the cluster writable with acks=all writes to every partition of the probe topic
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Metadata can show a leader for a partition while that leader is a dead broker the
    controllers have not fenced yet. This module writes to each partition of the probe
    topic with acks=all, again and again, until each one acknowledges a write, and reports
    how long after I(since) each partition first did.
  - With I(transactional), then commits a transaction that writes one probe record, again and again until one
    commits (each attempt bounded). A transactional producer's init and commit write C(__transaction_state),
    which has a C(min.insync.replicas) of its own.
  - Writes only probe records to the probe topic; reports C(changed=false).
options:
  topic:
    description: The probe topic (declared like the other topics, so its leaders cover every broker).
    type: str
    required: true
  since:
    description: When the cluster lost what it lost, in epoch seconds; figures are measured from it.
    type: float
  timeout:
    description: Seconds to keep probing before failing.
    type: int
    default: 300
  request_timeout:
    description: Seconds one probe write may take before it counts as not acknowledged.
    type: float
    default: 2
  transactional:
    description: Also commit a transaction that writes a probe record (the transaction coordinator's writes).
    type: bool
    default: false
extends_documentation_fragment:
  - stretch.kafka.kafka_admin
"""

EXAMPLES = r"""
- name: Wait until every partition acknowledges an acks=all write
  stretch.kafka.kafka_probe:
    bootstrap_servers: 10.0.1.11:9092,10.0.2.11:9092
    topic: stretch-probe
    since: "{{ lost_at }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
acked_after:
  description: Per partition, seconds from I(since) to its first acknowledged write.
  returned: always
  type: dict
every_partition_after:
  description: Seconds from I(since) until every partition had acknowledged a write (null if one never did).
  returned: always
  type: float
started_after:
  description: Seconds from I(since) to the first probe write (the figures cannot be smaller).
  returned: always
  type: float
pending:
  description: Partitions that never acknowledged, with the last reason.
  returned: always
  type: dict
transaction:
  description:
    - With I(transactional), C(committed_after) (seconds from I(since) until a transaction committed, null if none
      did) and C(pending) (the last reason, while none did).
  returned: when transactional
  type: dict
"""

import time  # noqa: E402  the documentation blocks come first, as in every Ansible module

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import kafka_admin, probe  # noqa: E402


def main():
    module = AnsibleModule(
        argument_spec={
            **kafka_admin.ARGUMENT_SPEC,
            "topic": {"type": "str", "required": True},
            "since": {"type": "float"},
            "timeout": {"type": "int", "default": 300},
            "request_timeout": {"type": "float", "default": 2},
            "transactional": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    kafka_admin.require(module)
    params = module.params
    since = params["since"] if params["since"] is not None else time.time()
    try:
        client = probe.KafkaProbe(
            params["bootstrap_servers"], params["topic"], params["client_config"], params["request_timeout"]
        )
    except Exception as exc:  # noqa: BLE001  an unreachable cluster is reported as such
        module.fail_json(msg=f"cannot connect to {params['bootstrap_servers']}: {exc}")
    try:
        partitions, spent = probe.until_answered(client.partitions, params["timeout"])
        outcome = probe.poll(partitions, client.send, since, max(0, params["timeout"] - spent))
    except Exception as exc:  # noqa: BLE001  a read failure fails the probe, closed
        module.fail_json(msg=f"probe of {params['topic']} failed: {exc}")
    finally:
        client.close()
    result = {"changed": False, **outcome}
    if params["transactional"] and not outcome["pending"]:
        result["transaction"] = transaction(module, since)
    if outcome["pending"]:
        reasons = "; ".join(f"{params['topic']}-{p}: {why}" for p, why in sorted(outcome["pending"].items())[:5])
        module.fail_json(
            msg=f"{len(outcome['pending'])} partition(s) acknowledged no acks=all write in {params['timeout']} s: "
            + reasons,
            **result,
        )
    if params["transactional"] and result["transaction"]["committed_after"] is None:
        module.fail_json(
            msg=f"no transaction that writes to {params['topic']} committed in {params['timeout']} s: "
            + result["transaction"]["pending"],
            **result,
        )
    module.exit_json(**result)


def transaction(module, since):
    """{"committed_after", "pending"} of transactions tried until one commits, or the timeout."""
    params = module.params
    try:
        client = probe.KafkaTransactionProbe(
            params["bootstrap_servers"], params["topic"], params["client_config"], params["request_timeout"]
        )
        outcome = probe.poll([0], client.send, since, params["timeout"], interval=1)
    except Exception as exc:  # noqa: BLE001  a failure fails the probe, closed
        return {"committed_after": None, "pending": f"{type(exc).__name__}: {exc}"}
    return {"committed_after": outcome["every_partition_after"], "pending": outcome["pending"].get(0, "")}


if __name__ == "__main__":
    main()
