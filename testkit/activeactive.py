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


def brokers_agree(served, received, readers):
    """What each DC's brokers say they served against what the reader hosts' kernels received from that DC.

    served: {dc: record bytes its brokers served the readers (their BytesOut)}; received: {host: {dc: IP bytes
    its kernel received from dc's client listeners}}; readers: {dc: [the hosts that read dc's records]}.

    A kernel receives the records with the fetch responses, TLS and TCP around them, so no DC's ratio
    received/served may be under 1; how far over depends on the fetch responses' sizes, which vary with timing
    (1.43 to 1.56 in the drill's runs, up to 5.3 % apart between the DCs in one run). What the check is for is
    a reader the counters miss (a DC's ratio falls by that reader's share of the DC's bytes) or a host counted
    twice (a ratio grows by its share). The two DCs' ratios must therefore agree within half the smallest
    counted reader's share: a run in which any one counted reader went uncounted, or was counted twice, fails.
    """
    got = {dc: sum(by_dc.get(dc, 0) for by_dc in received.values()) for dc in served}
    ratios = {dc: round(got[dc] / served[dc], 4) if served[dc] else None for dc in served}
    shares = {
        dc: round(min(received.get(host, {}).get(dc, 0) for host in readers[dc]) / got[dc], 4) if got[dc] else 0.0
        for dc in served
    }
    tolerance = round(min(shares.values(), default=0.0) / 2, 4)
    known = [r for r in ratios.values() if r is not None]
    agree = len(known) == len(ratios) >= 2 and min(known) >= 1.0 and max(known) <= min(known) * (1 + tolerance)
    return {"served": served, "received": got, "ratio": ratios, "reader_shares": shares, "tolerance": tolerance,
            "agree": agree}  # fmt: skip
