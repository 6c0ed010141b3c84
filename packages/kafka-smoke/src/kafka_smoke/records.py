"""The smoke data set: sequenced, checksummed records that can be validated on their own.

Each record's value is JSON: {"run", "p" (partition), "seq", "data" (base64
payload), "sha256" (of the payload)}. The payload is derived from (run, p, seq),
so the reader can tell a corrupt record from a good one without a copy of
what was written.
"""

from __future__ import annotations

import base64
import hashlib
import json


def payload(run_id, partition, seq, size):
    seed = f"{run_id}/{partition}/{seq}".encode()
    out = b""
    block = seed
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return out[:size]


def encode(run_id, partition, seq, size):
    data = payload(run_id, partition, seq, size)
    return json.dumps(
        {
            "run": run_id,
            "p": partition,
            "seq": seq,
            "data": base64.b64encode(data).decode(),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
        separators=(",", ":"),
    ).encode()


def validation(expected, observed):
    """Compare what a reader saw with what was written.

    expected: {partition: record count} written by the producer step.
    observed: {partition: {"count": records read, "own": records of this run
      and partition with 0 <= seq < expected, "distinct": distinct seqs among
      them, "corrupt": own records whose payload fails its checksum}}.
    Returns the report's validation section; "ok" is False on any problem.
    """
    per_partition = {}
    totals = dict.fromkeys(("expected", "read", "missing", "duplicate", "corrupt", "foreign"), 0)
    for p in sorted(set(expected) | set(observed), key=int):
        want = int(expected.get(p, 0))
        seen = observed.get(p) or {}
        count, own, distinct = (int(seen.get(k, 0)) for k in ("count", "own", "distinct"))
        row = {
            "expected": want,
            "read": count,
            "missing": want - distinct,
            "duplicate": own - distinct,
            "corrupt": int(seen.get("corrupt", 0)),
            "foreign": count - own,
        }
        per_partition[str(p)] = row
        for key in totals:
            totals[key] += row[key]
    ok = totals["expected"] > 0 and all(totals[k] == 0 for k in ("missing", "duplicate", "corrupt", "foreign"))
    return {"ok": ok, **totals, "partitions": per_partition}
