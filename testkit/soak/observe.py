"""The cluster's own view over time, sampled through the admin API, for the drills to show what a fault did.

Not the soak verifier's input (that one trusts only the clients' logs): this
is what the brokers and controllers say about themselves while a fault is
on. A sample, every interval seconds:

    {"t",                                          seconds since the epoch
     "quorum": {"leader", "epoch"} or None,        from the controllers (DescribeQuorum)
     "fenced": [broker id], "brokers": [id],       the registered brokers (DescribeCluster)
     "partitions": {p: {"leader", "isr"}},         of one topic (DescribeTopics)
     "hw": {p: high watermark},                    as the client's metadata leads it to each partition
     "errors": [what could not be read]}

summarize() turns the samples around one fault into the figures a report
carries: who led before, during and after, who was fenced and when, how each
partition's leader, ISR and high watermark moved.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition


class Observer(threading.Thread):
    def __init__(self, cluster, topic, interval=2.0):
        super().__init__(daemon=True)
        self.cluster, self.topic, self.interval = cluster, topic, interval
        self.samples, self._halt = [], threading.Event()

    def sample(self, admin, consumer):
        found = {"t": time.time(), "quorum": None, "fenced": None, "brokers": None, "partitions": None, "hw": None,
                 "errors": []}  # fmt: skip
        try:
            quorum = admin.quorum()
            found["quorum"] = {"leader": quorum["leader"], "epoch": quorum["epoch"]}
        except Exception as exc:  # noqa: BLE001  what could not be read is part of the picture
            found["errors"].append(f"quorum: {exc}")
        try:
            brokers = admin.brokers()
            found["brokers"] = sorted(brokers)
            found["fenced"] = sorted(b for b, info in brokers.items() if info["fenced"])
        except Exception as exc:  # noqa: BLE001
            found["errors"].append(f"brokers: {exc}")
        try:
            partitions, errors = admin.partitions()
            found["partitions"] = {
                p["partition"]: {"leader": p["leader"], "isr": sorted(p["isr"])}
                for p in partitions
                if p["topic"] == self.topic
            }
            found["errors"] += errors
        except Exception as exc:  # noqa: BLE001
            found["errors"].append(f"partitions: {exc}")
        hw = {}
        for p in sorted(found["partitions"] or {}):
            try:
                hw[p] = consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=3, cached=False)[1]
            except Exception as exc:  # noqa: BLE001
                found["errors"].append(f"high watermark of {p}: {exc}")
        found["hw"] = hw
        return found

    def run(self):
        admin = self.cluster.admin(timeout=5)
        consumer = Consumer({"bootstrap.servers": self.cluster.bootstrap_servers, "group.id": "observer",
                             **self.cluster.client_config})  # fmt: skip
        try:
            while not self._halt.is_set():
                started = time.monotonic()
                try:
                    self.samples.append(self.sample(admin, consumer))
                except Exception as exc:  # noqa: BLE001  a sample that failed whole is one with every part None
                    self.samples.append({"t": time.time(), "errors": [str(exc)]})
                self._halt.wait(max(0.0, self.interval - (time.monotonic() - started)))
        finally:
            admin.close()
            consumer.close()

    def stop(self):
        self._halt.set()
        self.join(timeout=60)
        return self.samples


def _at(samples, t, before=True):
    """The last sample at or before t (before=True), or the first at or after it."""
    if before:
        found = [s for s in samples if s["t"] <= t]
        return found[-1] if found else None
    found = [s for s in samples if s["t"] >= t]
    return found[0] if found else None


def _distinct(values):
    out = []
    for v in values:
        if not out or out[-1] != v:
            out.append(v)
    return out


def summarize(samples, start, end, whole_at, racks):
    """The cluster's view around one fault on [start, end], healed at end and whole again at whole_at.

    racks: {broker id: dc}. Times in the figures are seconds from start.
    """
    during = [s for s in samples if start <= s["t"] <= end]
    before, after = _at(samples, start), _at(samples, whole_at or end, before=False)

    def leader(s):
        return ((s or {}).get("quorum") or {}).get("leader")

    fenced_first = {}
    for s in during:
        for b in s.get("fenced") or []:
            fenced_first.setdefault(b, round(s["t"] - start, 1))
    partitions = {}
    for p, was in sorted(((before or {}).get("partitions") or {}).items()):
        seen = [(s["t"], (s.get("partitions") or {}).get(p)) for s in during]
        seen = [(t, x) for t, x in seen if x]
        shrunk = next((round(t - start, 1) for t, x in seen if len(x["isr"]) < len(was["isr"])), None)
        smallest = min((x["isr"] for _, x in seen), key=len, default=was["isr"])
        hw0 = ((before or {}).get("hw") or {}).get(p)
        hw1 = ((_at(samples, end) or {}).get("hw") or {}).get(p)
        partitions[p] = {
            "leader_before": was["leader"],
            "leader_dc_before": racks.get(was["leader"]),
            "leaders_during": _distinct(x["leader"] for _, x in seen),
            "leader_after": (((after or {}).get("partitions") or {}).get(p) or {}).get("leader"),
            "isr_before": was["isr"],
            "smallest_isr_during": smallest,
            "dropped_from_isr": sorted(set(was["isr"]) - set(smallest)),
            "isr_shrank_after_s": shrunk,
            "hw_moved_during": (hw1 - hw0) if hw0 is not None and hw1 is not None else None,
        }
    return {
        "samples_during": len(during),
        "quorum_leader_before": leader(before),
        "quorum_leaders_during": _distinct(leader(s) for s in during if s.get("quorum")),
        "quorum_unread_or_leaderless_samples": sum(1 for s in during if (leader(s) is None or leader(s) < 0)),
        "quorum_epochs_during": _distinct((s.get("quorum") or {}).get("epoch") for s in during if s.get("quorum")),
        "quorum_leader_after": leader(after),
        "fenced_during": {str(b): {"dc": racks.get(b), "first_seen_after_s": t} for b, t in fenced_first.items()},
        "partitions": partitions,
        "partitions_whose_hw_did_not_move": sorted(p for p, x in partitions.items() if x["hw_moved_during"] == 0),
    }
