"""The full read of the soak's topic after healing: every record of every partition, as a client of one DC.

Reads each partition from its first offset to the high watermark it had
when the read began, with client.rack set (follower fetching: each DC's read
comes from that DC's replicas), and writes read-<dc>.jsonl:

    {"p", "o", "producer", "k", "s"}     a soak record of this run (run id checked)
    {"p", "o", "foreign": true}          anything else
    {"e": "end", "low": {p: first offset}, "ends": {p: high watermark}, "reached": {p: offset read to},
     "complete": bool, "t"}

complete is false when a partition was not read to its end before the
deadline, or has lost records to retention (its first offset is not 0): the
verifier then fails closed instead of counting what it could not see.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from . import records


def read_topic(bootstrap_servers, client, topic, run_id, dc, out, timeout=600):
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap_servers,
            "group.id": f"soak-read-{run_id}-{dc}",
            "client.rack": dc,
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            **client,
        }
    )
    deadline = time.monotonic() + timeout
    try:
        meta = consumer.list_topics(topic, timeout=30).topics[topic]
        if meta.error is not None:
            raise RuntimeError(f"topic {topic}: {meta.error.str()}")
        partitions = sorted(meta.partitions)
        low, ends = {}, {}
        for p in partitions:
            low[p], ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
        reached = dict(low)
        assigned = [TopicPartition(topic, p, low[p]) for p in partitions if ends[p] > low[p]]
        consumer.assign(assigned)
        with Path(out).open("w") as f:
            while any(reached[p] < ends[p] for p in partitions) and time.monotonic() < deadline:
                for msg in consumer.consume(1000, 1.0):
                    if msg.error() is not None:
                        continue
                    p, o = msg.partition(), msg.offset()
                    if o >= ends[p]:
                        continue
                    reached[p] = max(reached[p], o + 1)
                    found = records.decode(msg.value())
                    if found and found[0] == run_id:
                        _, producer, key, seq = found
                        f.write(json.dumps({"p": p, "o": o, "producer": producer, "k": key, "s": seq}) + "\n")
                    else:
                        f.write(json.dumps({"p": p, "o": o, "foreign": True}) + "\n")
                # The position passes offsets that hold no record (a gap is not a record left unread).
                for tp in consumer.position(assigned):
                    if tp.offset >= 0:
                        reached[tp.partition] = max(reached[tp.partition], min(tp.offset, ends[tp.partition]))
            complete = all(reached[p] >= ends[p] for p in partitions) and not any(low.values())
            end = {"e": "end", "low": low, "ends": ends, "reached": reached, "complete": complete, "t": time.time()}
            f.write(json.dumps(end) + "\n")
        return end
    finally:
        consumer.close()
