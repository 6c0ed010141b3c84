"""The full read of the soak's topic after healing: every record of every partition, as a client of one DC.

Reads each partition from its first offset to the high watermark it had
when the read began, with client.rack set (follower fetching: each DC's read
comes from that DC's replicas), and writes read-<dc>.jsonl:

    {"p", "o", "producer", "k", "s"}     a soak record of this run (run id checked)
    {"p", "o", "foreign": true}          anything else
    {"e": "end", "low": {p: first offset}, "ends": {p: high watermark}, "reached": {p: offset read to},
     "complete": bool, "error": str or None, "t"}

It fails closed: complete is false when a partition was not read to its end
before the deadline, has lost records to retention (its first offset is not
0), or the read stopped on an error (the topic's metadata or watermarks not
read, a partition the consumer could not fetch from, its position reset),
and the end line names the error; the verifier then fails instead of
counting what it could not see. The position is never reset on its own
(auto.offset.reset=error): a jump past records would read as a shorter log.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition

from . import records

# Errors of a consumed message that end the read: what is behind them cannot be read.
FATAL = {KafkaError._AUTO_OFFSET_RESET, KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.TOPIC_AUTHORIZATION_FAILED,
         KafkaError.OFFSET_OUT_OF_RANGE}  # fmt: skip


class ReadError(RuntimeError):
    pass


def read_topic(bootstrap_servers, client, topic, run_id, dc, out, timeout=600):
    """Read the topic to the ends it had when the read began into out; return the end line (also its last line)."""
    end = {"e": "end", "low": {}, "ends": {}, "reached": {}, "complete": False, "error": None}
    deadline = time.monotonic() + timeout
    consumer = None
    with Path(out).open("w") as f:
        try:
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap_servers,
                    "group.id": f"soak-read-{run_id}-{dc}",
                    "client.rack": dc,
                    "enable.auto.commit": False,
                    "enable.partition.eof": False,
                    "auto.offset.reset": "error",
                    **client,
                }
            )
            _read(consumer, topic, run_id, f, end, deadline)
        except Exception as exc:  # noqa: BLE001  the end line carries it: the read failed, the verifier fails
            end["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            if consumer is not None:
                consumer.close()
            low, ends, reached = end["low"], end["ends"], end["reached"]
            end["complete"] = (
                end["error"] is None
                and bool(ends)
                and all(reached.get(p, 0) >= n for p, n in ends.items())
                and not any(low.values())
            )
            end["t"] = time.time()
            f.write(json.dumps(end) + "\n")
    return end


def _read(consumer, topic, run_id, f, end, deadline):
    meta = consumer.list_topics(topic, timeout=max(1.0, min(30.0, deadline - time.monotonic())))
    found = meta.topics.get(topic)
    if found is None or found.error is not None:
        raise ReadError(f"topic {topic}: {found.error.str() if found is not None else 'not in the metadata'}")
    partitions = sorted(found.partitions)
    if not partitions:
        raise ReadError(f"topic {topic}: no partitions in the metadata")
    low, ends, reached = end["low"], end["ends"], end["reached"]
    for p in partitions:
        low[p], ends[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30, cached=False)
        reached[p] = low[p]
    assigned = [TopicPartition(topic, p, low[p]) for p in partitions if ends[p] > low[p]]
    consumer.assign(assigned)
    while any(reached[p] < ends[p] for p in partitions):
        if time.monotonic() > deadline:
            return  # not complete: the end line shows which partitions were read short
        for msg in consumer.consume(1000, 1.0):
            err = msg.error()
            if err is not None:
                if err.code() in FATAL or err.fatal():
                    raise ReadError(f"partition {msg.partition()}: {err.name()}: {err.str()}")
                continue  # a transient error: the client retries, the deadline bounds it
            p, o = msg.partition(), msg.offset()
            if o >= ends[p]:
                continue
            reached[p] = max(reached[p], o + 1)
            decoded = records.decode(msg.value())
            if decoded and decoded[0] == run_id:
                _, producer, key, seq = decoded
                f.write(json.dumps({"p": p, "o": o, "producer": producer, "k": key, "s": seq}) + "\n")
            else:
                f.write(json.dumps({"p": p, "o": o, "foreign": True}) + "\n")
        # The position passes offsets that hold no record (a gap is not a record left unread).
        for tp in consumer.position(assigned):
            if tp.offset >= 0:
                reached[tp.partition] = max(reached[tp.partition], min(tp.offset, ends[tp.partition]))
