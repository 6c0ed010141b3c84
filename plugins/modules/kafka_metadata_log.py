"""Ansible module: when a lost DC stopped blocking writes, by the times of the KRaft metadata log's records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_metadata_log
short_description: "Internal: Read from a controller's metadata log when a lost DC's brokers were fenced"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Runs Kafka's own C(DumpLogSegments) (C(--cluster-metadata-decoder)) on the segments of the KRaft metadata
    log written since I(since), on the controller it runs on, and returns when the controllers fenced (or
    unregistered) each of I(brokers), and, with I(min_isr_relaxed), when the cluster-wide
    C(min.insync.replicas) was written. The latest of these is when the lost DC stopped blocking C(acks=all)
    writes, in Kafka's own record.
  - Only those records are parsed; nothing else the log holds (credentials, configurations) is returned.
  - Never guesses. No segment written since I(since), the tool failing, or a broker with no fencing record
    since I(since) is reported in C(problems) with C(at) null, never a time; the task itself does not fail,
    since the read only reports.
  - Never changes anything; runs in check mode too.
options:
  brokers:
    description: The lost DC's broker ids.
    type: list
    elements: int
    required: true
  since:
    description: Epoch seconds; records written before it do not count (when the DC went silent).
    type: float
    required: true
  min_isr_relaxed:
    description: Whether the run lowered the cluster-wide C(min.insync.replicas), so that its record counts too.
    type: bool
    default: false
  log_dir:
    description: The controller's C(metadata.log.dir).
    type: path
    required: true
  kafka_home:
    description: The Kafka installation whose C(libs) hold C(kafka-tools).
    type: path
    required: true
  java:
    description: The Java to run the tool with.
    type: str
    default: java
"""

EXAMPLES = r"""
- name: When did Kafka fence dc2's brokers
  stretch.kafka.kafka_metadata_log:
    brokers: [201, 202]
    since: 1795765863.72
    log_dir: /var/lib/kafka/metadata
    kafka_home: /opt/kafka/current
"""

RETURN = r"""
at:
  description: Epoch seconds of the last record the DC's loss waited for; null when the log does not hold it.
  returned: always
  type: float
fenced:
  description: Each broker's fencing time (epoch seconds), by broker id.
  returned: always
  type: dict
min_isr_at:
  description: When the cluster-wide min.insync.replicas was last written since I(since); null when it was not.
  returned: always
  type: float
problems:
  description: Why C(at) is null; empty when it is known.
  returned: always
  type: list
  elements: str
segments:
  description: The segment files read.
  returned: always
  type: list
  elements: str
"""

import glob  # noqa: E402
import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import metadata_log  # noqa: E402

TOOL = "org.apache.kafka.tools.DumpLogSegments"
# A segment last written before the DC went silent holds none of the records (a minute for clocks and flushes).
MTIME_MARGIN_SECONDS = 60


def main():
    module = AnsibleModule(
        argument_spec={
            "brokers": {"type": "list", "elements": "int", "required": True},
            "since": {"type": "float", "required": True},
            "min_isr_relaxed": {"type": "bool", "default": False},
            "log_dir": {"type": "path", "required": True},
            "kafka_home": {"type": "path", "required": True},
            "java": {"type": "str", "default": "java"},
        },
        supports_check_mode=True,
    )
    p = module.params
    partition = os.path.join(p["log_dir"], "__cluster_metadata-0")
    oldest = p["since"] - MTIME_MARGIN_SECONDS
    segments = sorted(f for f in glob.glob(os.path.join(partition, "*.log")) if os.path.getmtime(f) >= oldest)
    result = {"changed": False, "at": None, "fenced": {}, "min_isr_at": None, "segments": segments}
    if not segments:
        module.exit_json(**result, problems=[f"no segment of {partition} was written since the DC went silent"])
    command = [p["java"], "-cp", os.path.join(p["kafka_home"], "libs", "*"), TOOL,
               "--cluster-metadata-decoder", "--files", ",".join(segments)]  # fmt: skip
    rc, out, err = module.run_command(command)
    if rc != 0:
        module.exit_json(**result, problems=[f"{TOOL} exited {rc}: {err.strip()[-500:]}"])
    found = metadata_log.writable_again(
        metadata_log.records(out.splitlines()), p["brokers"], p["since"], p["min_isr_relaxed"]
    )
    module.exit_json(**{**result, **found, "fenced": {str(b): t for b, t in found["fenced"].items()}})


if __name__ == "__main__":
    main()
