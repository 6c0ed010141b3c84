"""Ansible module: how long a lost DC blocked writes, by the times of the KRaft metadata log's records."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kafka_metadata_log
short_description: "Internal: Read from a controller's metadata log when a lost DC's brokers were fenced"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Runs Kafka's own C(DumpLogSegments) (C(--cluster-metadata-decoder)) on the newest I(max_bytes) of the KRaft
    metadata log of the controller it runs on (whole segments from the newest back, the oldest one read from a
    record batch within the bound, through a private copy removed afterwards), within I(timeout) seconds, and
    returns when the controllers fenced (or unregistered) each of I(brokers) and, for what the failover relaxed,
    when the cluster-wide and each topic's own C(min.insync.replicas) were written. The latest of these is when
    the lost DC stopped blocking C(acks=all) writes, in Kafka's own record.
  - The outage's start is Kafka's record too, never this run's clock. With I(lost_since) (the quorum leader's
    fetch time of every broker of the DC) the figure is exact; without it the record only bounds the start (the
    first fencing of the DC's brokers, and I(lost_by)), and the figure is a least value; without Kafka's record
    there is no figure. C(summary) says which.
  - Only those records are parsed; nothing else the log holds (credentials, configurations) is returned.
  - Never guesses. The tool failing, a bound reached before the records were found, or a broker with no fencing
    record is reported in C(problems) with C(at) null, never a time; the task itself does not fail, since the
    read only reports.
  - Never changes anything; runs in check mode too.
options:
  brokers:
    description: The lost DC's broker ids.
    type: list
    elements: int
    required: true
  lost_since:
    description:
      - When the DC went silent, epoch seconds, exact (the quorum leader's last fetch time of every broker of the
        DC, C(kafka_gate)'s C(lost_since)); the outage's start. Null when not known.
    type: float
  lost_by:
    description: A bound of when the DC went silent when I(lost_since) is not known (C(kafka_gate)'s C(lost_by)).
    type: float
  min_isr_relaxed:
    description: Whether the failover lowered the cluster-wide C(min.insync.replicas), so that its record counts too.
    type: bool
    default: false
  relaxed_topics:
    description: The topics whose own C(min.insync.replicas) the failover lowered, whose records count too.
    type: list
    elements: str
    default: []
  max_bytes:
    description: The most of the metadata log, from its newest end, that is decoded.
    type: int
    default: 134217728
  timeout:
    description: Seconds the whole read may take before it is stopped.
    type: int
    default: 120
  dc:
    description: The lost DC's name, for C(summary).
    type: str
    default: the DC
  host:
    description: This node's name, for C(summary); its host name when empty.
    type: str
    default: ""
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
    lost_since: 1795765863.72
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
  description: When the cluster-wide min.insync.replicas was last written; null when it was not, or not relaxed.
  returned: always
  type: float
relaxed_at:
  description: When each relaxed topic's own min.insync.replicas was last written, by topic.
  returned: always
  type: dict
writable_after:
  description: Seconds from I(lost_since) to C(at), when both are known; null otherwise.
  returned: always
  type: float
writable_after_at_least:
  description: Without I(lost_since), the least the outage lasted, from C(start_by) to C(at); null otherwise.
  returned: always
  type: float
start_by:
  description: When the DC was down by, in Kafka's record (I(lost_since), or else the first fencing or I(lost_by)).
  returned: always
  type: float
summary:
  description: The line to show, with the figure, the bound, or why neither is known.
  returned: always
  type: str
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
bytes:
  description: How many bytes of the log were decoded.
  returned: always
  type: int
complete:
  description: Whether every segment was read whole (else only the newest I(max_bytes)).
  returned: always
  type: bool
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import metadata_log  # noqa: E402

TOOL = "org.apache.kafka.tools.DumpLogSegments"


def main():
    module = AnsibleModule(
        argument_spec={
            "brokers": {"type": "list", "elements": "int", "required": True},
            "lost_since": {"type": "float"},
            "lost_by": {"type": "float"},
            "min_isr_relaxed": {"type": "bool", "default": False},
            "relaxed_topics": {"type": "list", "elements": "str", "default": []},
            "max_bytes": {"type": "int", "default": 134217728},
            "timeout": {"type": "int", "default": 120},
            "dc": {"type": "str", "default": "the DC"},
            "host": {"type": "str", "default": ""},
            "log_dir": {"type": "path", "required": True},
            "kafka_home": {"type": "path", "required": True},
            "java": {"type": "str", "default": "java"},
        },
        supports_check_mode=True,
    )
    p = module.params
    classpath = os.path.join(p["kafka_home"], "libs", "*")
    got = metadata_log.read(
        os.path.join(p["log_dir"], "__cluster_metadata-0"),
        p["max_bytes"],
        p["timeout"],
        lambda files: [p["java"], "-cp", classpath, TOOL, "--cluster-metadata-decoder", "--files", ",".join(files)],
    )
    found = {"at": None, "fenced": {}, "min_isr_at": None, "relaxed_at": {}, "problems": got["problems"]}
    if got["records"] is not None:
        found = metadata_log.writable_again(
            got["records"], p["brokers"], p["min_isr_relaxed"], p["relaxed_topics"], got["bound"]
        )
    figure = metadata_log.outage(found, p["lost_since"], p["lost_by"])
    module.exit_json(
        changed=False,
        **{**found, "fenced": {str(b): t for b, t in found["fenced"].items()}},
        **{k: figure[k] for k in ("writable_after", "writable_after_at_least", "start_by")},
        summary=metadata_log.summary(p["dc"], found, figure, p["host"] or os.uname().nodename),
        segments=got["segments"],
        bytes=got["bytes"],
        complete=got["complete"],
    )


if __name__ == "__main__":
    main()
