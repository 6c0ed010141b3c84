"""The active/active drill's verdicts on the demo job's sinks (examples/consumer/jobs/active_active.py).

Each DC's job writes its own sink (kafka_group_source.sink.BatchFiles), one
row per record: [topic, partition, offset, run, seq, bytes, broker], run and
seq those of a load-harness record, broker the one that served it. The
delivery contract's own verdicts (duplicates, handovers, takeover, calm)
are kafka_group_source.delivery's; here is what needs the load harness's
acknowledgements or the brokers' racks. Plain data in, figures out.
"""

from __future__ import annotations

from kafka_group_source import delivery


def judge(rows_by_dc, acked, run):
    """Missing and duplicate records over every DC's sink.

    rows_by_dc: {dc: [row]} (each DC's batch files, each batch once);
    acked: {(partition, seq)} the load harness of run had acknowledged.
    """
    found = {(partition, seq) for rows in rows_by_dc.values() for _t, partition, _o, r, seq, *_ in rows if r == run}
    missing = sorted(acked - found)
    return {
        "acked": len(acked),
        **delivery.duplicates(rows_by_dc),
        "missing": len(missing),
        "missing_sample": missing[:10],
    }


def locality(rows, racks, dc):
    """The share of the record bytes a DC's job read that its own DC's brokers served.

    rows: the job's rows with the broker that served each; racks: {broker id:
    DC}. Bytes of an unknown broker count as not local. None without rows.
    """
    total = local = 0
    for row in rows:
        size, broker = row[5], row[6]
        total += size
        if broker is not None and racks.get(int(broker)) == dc:
            local += size
    return round(local / total, 4) if total else None
