"""When Kafka's own record says a lost DC stopped blocking writes: read from the KRaft metadata log.

The controller that fences a broker writes, in one batch, the broker's
BrokerRegistrationChangeRecord (fenced) and the PartitionChangeRecords that
take it out of every ISR and move its leaderships: from that batch on, an
acks=all write waits no more for it. A DC's loss stops blocking writes when
the last of its brokers is fenced (or unregistered), and, if the run relaxed
the cluster's min.insync.replicas, when that setting was written too. Both are
records of the metadata log with the controller's CreateTime.

The input is the text of Kafka's DumpLogSegments with --cluster-metadata-decoder
(one record a line, "| offset: N CreateTime: MS ... payload: {json}"); only the
records named here are parsed, so nothing else the log holds (credentials,
configurations) leaves the function.
"""

from __future__ import annotations

import json
import re

RECORD = re.compile(r"^\|\s*offset:\s*(\d+)\s+CreateTime:\s*(-?\d+)\b.*?\bpayload:\s*(\{.*\})\s*$")
FENCING = ("BROKER_REGISTRATION_CHANGE_RECORD", "FENCE_BROKER_RECORD", "UNREGISTER_BROKER_RECORD")
CONFIG = "CONFIG_RECORD"
BROKER_RESOURCE = 4  # ConfigResource.Type.BROKER in the metadata records
WANTED = (*FENCING, CONFIG)


def records(lines):
    """[(offset, epoch seconds, type, data)] of the fencing and configuration records in the dump's lines."""
    out = []
    for line in lines:
        if not line.startswith("|") or not any(f'"type":"{kind}"' in line for kind in WANTED):
            continue
        match = RECORD.match(line.strip())
        if not match:
            continue
        try:
            payload = json.loads(match.group(3))
        except ValueError:
            continue
        out.append((int(match.group(1)), int(match.group(2)) / 1000.0, payload.get("type"), payload.get("data") or {}))
    return out


def _fenced_broker(kind, data):
    """The broker id a record fences or unregisters; None for any other record."""
    if kind == "BROKER_REGISTRATION_CHANGE_RECORD" and data.get("fenced") == 1:
        return data.get("brokerId")
    if kind == "FENCE_BROKER_RECORD":
        return data.get("id")
    if kind == "UNREGISTER_BROKER_RECORD":
        return data.get("brokerId")
    return None


def writable_again(recs, brokers, since, min_isr_relaxed=False):
    """When the lost brokers stopped blocking writes, by the metadata log's own times.

    recs: records(); brokers: the lost DC's broker ids; since: epoch seconds
    before which no record counts (when the DC went silent, less a margin);
    min_isr_relaxed: the run lowered the cluster's min.insync.replicas, so its
    record counts too. Returns {"at", "fenced": {id: seconds}, "min_isr_at",
    "problems"}: "at" is None, with the reason in problems, when the log does
    not hold what it must (a broker never fenced after since, a relaxed
    setting never written), never a guess.
    """
    fenced, min_isr_at = {}, None
    for _offset, at, kind, data in sorted(recs):
        if at < since:
            continue
        broker = _fenced_broker(kind, data)
        if broker in brokers and broker not in fenced:
            fenced[broker] = at
        if (kind == CONFIG and data.get("resourceType") == BROKER_RESOURCE and data.get("resourceName") == ""
                and data.get("name") == "min.insync.replicas"):  # fmt: skip
            min_isr_at = at
    problems = [
        f"the metadata log holds no fencing of broker {b} since {since:.3f}" for b in sorted(set(brokers) - set(fenced))
    ]
    if min_isr_relaxed and min_isr_at is None:
        problems.append(f"the metadata log holds no cluster-wide min.insync.replicas written since {since:.3f}")
    if not brokers:
        problems.append("no broker to look for: the DC has none")
    at = None if problems else max([*fenced.values(), *([min_isr_at] if min_isr_relaxed else [])])
    return {"at": at, "fenced": fenced, "min_isr_at": min_isr_at, "problems": problems}
