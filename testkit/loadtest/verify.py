"""Judges a load run: what the producer had acknowledged against what each DC's reader read.

Plain data in, a report out:
    acks      [(partition, offset, seq, sent, acked)]   acknowledged writes (monotonic seconds)
    errors    [(seq, error)]                             delivery errors the application saw
    reads     {dc: [(partition, offset, seq, read)]}    what each reader consumed, and when
    marks     [(name, time)]                            moments the operator marked (a DC lost, ...)
    fetched   {dc: [(time, {(partition, broker): bytes})]}   each reader's record bytes fetched, cumulative, over time
    racks     {broker: dc}
Each record's value carries the run id, its partition and its per-partition sequence number.
"""

from __future__ import annotations

import math
from collections import defaultdict

# A member's partitions at a time, from its timeline: the same reading as the kafka-group source's members'.
from kafka_group_source.delivery import owned_at

VALUE_PREFIX = b"LOAD"


# The first seconds of a producer's life (metadata, producer id, connections), kept apart from its latency figures.
WARMUP_SECONDS = 5.0


def encode(run_id, partition, seq, size):
    head = b"%s:%s:%d:%d:" % (VALUE_PREFIX, run_id.encode(), partition, seq)
    return head + b"." * max(0, size - len(head))


def decode(value):
    """(run id, partition, seq) of a harness record, or None for anything else."""
    parts = value.split(b":", 4)
    if len(parts) < 4 or parts[0] != VALUE_PREFIX:
        return None
    try:
        return parts[1].decode(), int(parts[2]), int(parts[3])
    except ValueError:
        return None


def percentile(values, q):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def longest_gap(times, start, end):
    """The longest time without an event from start to end: between start, each of times inside [start, end] and
    end (the window's edges count). Of acknowledgement times, the longest produce stall."""
    points = sorted([start, *(t for t in times if start <= t <= end), end])
    return max((b - a for a, b in zip(points, points[1:], strict=False)), default=0.0)


def _fetched_between(timeline, t0, t1):
    """Bytes fetched per key between t0 and t1, from cumulative samples (they never go down)."""

    def at(t):
        before = [sample for ts, sample in timeline if ts <= t]
        return before[-1] if before else {}

    first, last = at(t0), at(t1)
    return {k: n - first.get(k, 0) for k, n in last.items()}


def own_share(by_broker, racks, dc):
    """The share of the bytes in {broker: bytes} from brokers of dc, or None when there are none."""
    total = sum(by_broker.values())
    own = sum(n for broker, n in by_broker.items() if racks.get(broker) == dc)
    return round(own / total, 4) if total else None


def by_broker(fetched):
    """{broker: bytes} of {(partition, broker): bytes}."""
    out = {}
    for (_, broker), n in fetched.items():
        out[broker] = out.get(broker, 0) + n
    return out


def locality(fetched, racks, dc):
    """Where a reader's record bytes {(partition, broker): bytes} came from: the share from brokers of dc, and the
    partitions read from brokers of another DC ("partition@broker": bytes)."""
    elsewhere = {f"{p}@{b}": n for (p, b), n in sorted(fetched.items()) if n and racks.get(b) != dc}
    return {"own_dc_byte_share": own_share(by_broker(fetched), racks, dc), "read_from_other_dcs": elsewhere}


def misrouted_reads(read_elsewhere, snapshots):
    """Why a reader's reads from another DC ({"partition@broker": bytes}) were not the client's own doing.

    snapshots: the topic's partitions as {partition: {"leader", "isr",
    "replicas"}}, read as the window opened and as it closed. A leader
    serves a reader of another DC only while no replica in the reader's DC
    is in its ISR, and a follower never sends a reader elsewhere: a read
    from another DC's follower is the client's choice to stay, a read from
    a leader, or with an ISR not full, is Kafka's. An unreadable snapshot
    or an unparsable entry is a problem too.
    """
    problems = []
    if read_elsewhere is None:
        return ["the reader's fetches were not counted"]
    if not snapshots or any(not s for s in snapshots):
        return ["the topic's partitions could not be read"]
    for snapshot in snapshots:
        short = sorted(p for p, s in snapshot.items() if len(s["isr"]) < len(s["replicas"]))
        if short:
            problems.append(f"ISR not full for partition(s) {short}")
    for key in sorted(read_elsewhere):
        partition, _, broker = key.partition("@")
        try:
            partition, broker = int(partition), int(broker)
        except ValueError:
            problems.append(f"{key}: not partition@broker")
            continue
        leaders = {s.get(partition, {}).get("leader") for s in snapshots}
        if broker in leaders:
            problems.append(f"partition {partition} read from its leader {broker}, in another DC")
        elif None in leaders:
            problems.append(f"partition {partition} is not in the topic")
    return list(dict.fromkeys(problems))


def windows(marks, acks, reads, fetched, racks, end):
    """Per marked window: writes acknowledged, how soon each partition was acknowledged again, reads per DC."""
    out = []
    partitions = sorted({a[0] for a in acks})
    bounds = [*marks, ("end", end)]
    for (name, t0), (_, t1) in zip(bounds, bounds[1:], strict=False):
        inside = [a for a in acks if t0 <= a[4] < t1]
        first = {}
        for a in sorted(inside, key=lambda a: a[4]):
            first.setdefault(a[0], a[4] - t0)
        window = {
            "name": name,
            "seconds": round(t1 - t0, 1),
            "acknowledged": len(inside),
            "first_ack_seconds": round(min(first.values()), 2) if first else None,
            "every_partition_acked_seconds": round(max(first.values()), 2) if len(first) == len(partitions) else None,
            "latency_max_ms": round(max((a[4] - a[3] for a in inside), default=0.0) * 1000, 1),
            "dcs": {},
        }
        for dc, records in sorted(reads.items()):
            window["dcs"][dc] = {
                "read": sum(1 for r in records if t0 <= r[3] < t1),
                **locality(_fetched_between(fetched.get(dc, []), t0, t1), racks, dc),
            }
        out.append(window)
    return out


def judge(acks, errors, reads, start, end, *, sent, warmup=WARMUP_SECONDS):
    """The verdict of a run.

    sent: the records handed to the producer, counted apart from what it
    answered, so a write never answered shows as unconfirmed. Every write is
    one outcome: acknowledged, failed with an error, or unconfirmed.

    The latency figures are the steady state's: records sent once `warmup` seconds have passed since the start
    (the producer's metadata, its producer id and its connections come first); the warm-up's are apart.
    """
    steady = [a[4] - a[3] for a in acks if a[3] >= start + warmup]
    warm = [a[4] - a[3] for a in acks if a[3] < start + warmup]
    answered = len(acks) + len(errors)
    report = {
        "sent": sent,
        "acknowledged": len(acks),
        # Neither acknowledged nor failed when the producer gave up waiting:
        # a write whose fate is unknown is not a pass.
        "unconfirmed": max(0, sent - answered),
        "outcomes": {"acknowledged": len(acks), "failed": len(errors), "unconfirmed": max(0, sent - answered)},
        # More answers than writes: the counts cannot be trusted.
        "accounting_error": f"{answered} outcomes for {sent} writes" if answered > sent else None,
        "produce_errors": len(errors),
        "produce_error_kinds": sorted({e for _, e in errors}),
        "latency_p50_ms": round(percentile(steady, 0.50) * 1000, 1),
        "latency_p99_ms": round(percentile(steady, 0.99) * 1000, 1),
        "latency_max_ms": round(max(steady, default=0.0) * 1000, 1),
        "warmup_seconds": warmup,
        "warmup_latency_p99_ms": round(percentile(warm, 0.99) * 1000, 1),
        "first_ack_seconds": round(min(a[4] for a in acks) - start, 3) if acks else None,
        "longest_stall_seconds": round(longest_gap([a[4] for a in acks], start, end), 2),
        "duration_seconds": round(end - start, 1),
        "dcs": {},
    }
    # librdkafka can confirm a write without its offset (the broker answered a
    # retried batch as a duplicate of one already written): such a record is
    # found by its partition and sequence instead.
    acked = {(a[0], a[1]): a[2] for a in acks if a[1] is not None and a[1] >= 0}
    acked_by_seq = sorted((a[0], a[2]) for a in acks if a[1] is None or a[1] < 0)
    report["acknowledged_without_offset"] = len(acked_by_seq)
    for dc, records in sorted(reads.items()):
        seen = {}
        for partition, offset, seq, *_ in records:
            seen[(partition, offset)] = seq
        lost = sorted(k for k, seq in acked.items() if seen.get(k) != seq)
        held = {(p, seq) for (p, _), seq in seen.items()}
        lost += [(p, f"seq {seq}") for p, seq in acked_by_seq if (p, seq) not in held]
        reordered, duplicates = [], []
        by_partition = defaultdict(list)
        for (partition, offset), seq in sorted(seen.items()):
            by_partition[partition].append((offset, seq))
        for partition, entries in by_partition.items():
            before, highest = set(), -1
            for offset, seq in entries:
                if seq in before:
                    duplicates.append(f"{partition}@{offset} seq {seq}")
                elif seq < highest:
                    reordered.append(f"{partition}@{offset} seq {seq} after {highest}")
                before.add(seq)
                highest = max(highest, seq)
        report["dcs"][dc] = {
            "read": len(seen),
            "lost": len(lost),
            "lost_examples": [f"{p}@{o}" for p, o in lost[:5]],
            "reordered": len(reordered),
            "reordered_examples": reordered[:5],
            "duplicates": len(duplicates),
            "duplicate_examples": duplicates[:5],
        }
    report["lost"] = max((d["lost"] for d in report["dcs"].values()), default=len(acks))
    report["reordered"] = sum(d["reordered"] for d in report["dcs"].values())
    # A record written twice (an unacknowledged first copy, then the retry)
    # is not a lost or reordered acknowledged write; it is reported apart.
    report["duplicates"] = max((d["duplicates"] for d in report["dcs"].values()), default=0)
    report["ok"] = (
        bool(reads)
        and report["lost"] == 0
        and report["reordered"] == 0
        and report["produce_errors"] == 0
        and report["unconfirmed"] == 0
        and report["accounting_error"] is None
    )
    return report


def judge_group(acked, consumed):
    """What a consumer group read of a run, against what the producer had acknowledged.

    acked: [(partition, seq)]; consumed: {member: [(partition, seq)]} of the
    run's records, in the order each member read them. At-least-once: a
    record read by two members (a partition handed over before its last
    offsets were committed) is a duplicate, not an error; one read by none
    is lost.
    """
    read = [key for records in consumed.values() for key in records]
    unique = set(read)
    lost = sorted(set(acked) - unique)
    return {
        "acknowledged": len(set(acked)),
        "read": len(read),
        "lost": len(lost),
        "lost_examples": [f"{p} seq {s}" for p, s in lost[:10]],
        "duplicates": len(read) - len(unique),
        "by_member": {m: len(records) for m, records in sorted(consumed.items())},
    }


def owned_over_time(events):
    """[(time, frozenset of partitions)] a member owned after each of its assignment events (incremental)."""
    owned, timeline = set(), []
    for event in sorted(events, key=lambda e: e["t"]):
        if event["event"] == "assigned":
            owned |= set(event["partitions"])
        elif event["event"] in ("revoked", "lost"):
            owned -= set(event["partitions"])
        else:
            continue
        timeline.append((event["t"], frozenset(owned)))
    return timeline


def takeover(events, dead, killed_at):
    """Seconds from killed_at until the surviving members together owned every partition the dead ones had.

    events: {member: [event]}; dead: the members killed at killed_at.
    None when the survivors never took all of them over, and when the dead
    owned nothing when they were killed ("why" says so): a takeover that did
    not happen is not one of no time.
    """
    timelines = {m: owned_over_time(e) for m, e in events.items()}
    orphaned = set().union(*(owned_at(timelines[m], killed_at) for m in dead)) if dead else set()
    if not orphaned:
        why = f"the members killed ({sorted(dead)}) owned no partition then: nothing was taken over"
        return {"partitions": [], "seconds": None, "why": why}
    survivors = [m for m in timelines if m not in dead]
    moments = sorted({t for m in survivors for t, _ in timelines[m] if t >= killed_at})
    for t in moments:
        if orphaned <= set().union(*(owned_at(timelines[m], t) for m in survivors)):
            return {"partitions": sorted(orphaned), "seconds": round(t - killed_at, 2)}
    return {"partitions": sorted(orphaned), "seconds": None}
