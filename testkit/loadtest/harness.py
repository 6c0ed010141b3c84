"""The producer and the per-DC readers of a load run, each in its own thread, each bounded."""

from __future__ import annotations

import json
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from testkit.producer import DEFAULTS

from . import verify

# The load's producer settings, under the caller's: the smoke producer's (testkit.producer.DEFAULTS: idempotent,
# acks=all, one request in flight, a lost leader's connection retried every second at most) and a long delivery
# timeout (it retries through leader changes; only what it gives up on reaches the application as an error). One
# request in flight also bounds what a lost DC leaves to retry: librdkafka resends each request that was in flight
# to a lost leader as a request of its own, and the new leader answers a connection's requests one at a time, each
# once its followers have fetched it (docs/wan.md#the-dc-loss-stall).
PRODUCER = {**DEFAULTS, "delivery.timeout.ms": 300000}


class LoadProducer(threading.Thread):
    """Writes sequenced records, round robin over the partitions, at a steady rate.

    Idempotent, acks=all, a long delivery timeout: the producer retries through
    leader changes, and only what it gives up on reaches the application as an
    error. Stops at stop(), after duration seconds, or after max_records.
    """

    def __init__(self, config, topic, partitions, run_id, rate, duration, max_records, size=512):
        super().__init__(daemon=True)
        self.topic, self.partitions, self.run_id = topic, partitions, run_id
        self.rate, self.duration, self.max_records, self.size = rate, duration, max_records, size
        self.config = {**PRODUCER, **config}
        self.acks, self.errors = [], []
        self.sent = 0
        self.started = self.finished = None
        self._halt = threading.Event()

    def stop(self):
        self._halt.set()

    def run(self):
        producer = Producer(self.config)
        next_seq = dict.fromkeys(self.partitions, 0)
        self.started = time.monotonic()
        sent = 0
        while not self._halt.is_set() and sent < self.max_records:
            now = time.monotonic()
            if now - self.started >= self.duration:
                break
            due = int((now - self.started) * self.rate) + 1
            while sent < min(due, self.max_records):
                p = self.partitions[sent % len(self.partitions)]
                seq = next_seq[p]
                try:
                    producer.produce(
                        self.topic,
                        value=verify.encode(self.run_id, p, seq, self.size),
                        partition=p,
                        on_delivery=self._delivered(p, seq, time.monotonic()),
                    )
                except BufferError:
                    break
                next_seq[p] += 1
                sent += 1
                self.sent = sent
            producer.poll(0.01)
        producer.flush(330)
        self.finished = time.monotonic()

    def _delivered(self, partition, seq, sent):
        def callback(err, msg):
            if err is not None:
                self.errors.append((seq, err.name()))
            else:
                self.acks.append((partition, msg.offset(), seq, sent, time.monotonic()))

        return callback


class FetchedBytes:
    """The record bytes a consumer fetched, per partition and the broker it fetched each from.

    From librdkafka's statistics: each report's growth of a partition's
    rxbytes is put on the broker it is fetched from then (its leader, or with
    client.rack a replica in the client's DC). Unlike the per-broker totals,
    it leaves out the metadata, the group's heartbeats, connections' TLS
    handshakes and the leaders' redirections: what was read where.
    """

    def __init__(self, topic):
        self.topic = topic
        self.counts = {}  # {(partition, broker): bytes}, cumulative
        self._seen = {}

    def update(self, stats):
        for part in stats.get("topics", {}).get(self.topic, {}).get("partitions", {}).values():
            key, now, broker = part.get("partition", -1), part.get("rxbytes", 0), part.get("broker", -1)
            if key < 0 or broker < 0:
                continue  # not fetched from any broker now: its growth counts at the next report that has one
            delta = now - self._seen.get(key, 0)
            self._seen[key] = now
            if delta > 0:
                self.counts[(key, broker)] = self.counts.get((key, broker), 0) + delta

    def by_broker(self):
        return verify.by_broker(self.counts)


class DcReader(threading.Thread):
    """Reads every partition from start_offsets as a consumer in one DC (client.rack), until told to finish.

    finish(end_offsets) makes it read up to those offsets and stop, or give
    up at the deadline. Keeps the record bytes it fetched from each broker
    for each partition (FetchedBytes), over time.
    """

    def __init__(self, config, topic, start_offsets, dc, run_id):
        super().__init__(daemon=True)
        self.topic, self.start_offsets, self.dc, self.run_id = topic, dict(start_offsets), dc, run_id
        self.config = {
            "group.id": f"loadtest-{run_id}-{dc}",
            "client.rack": dc,
            "enable.auto.commit": False,
            "statistics.interval.ms": 1000,
            "stats_cb": self._stats,
            **config,
        }
        self.records, self.fetched, self.fetched_timeline = [], FetchedBytes(topic), []
        self._targets, self._deadline = None, None
        self._positions = {}
        self._lock = threading.Lock()

    def _stats(self, raw):
        self.fetched.update(json.loads(raw))
        self.fetched_timeline.append((time.monotonic(), dict(self.fetched.counts)))

    def finish(self, end_offsets, timeout):
        with self._lock:
            self._targets, self._deadline = dict(end_offsets), time.monotonic() + timeout

    def _done(self):
        with self._lock:
            if self._targets is None:
                return False
            if time.monotonic() > self._deadline:
                return True
            return all(self._positions.get(p, 0) >= end for p, end in self._targets.items())

    def run(self):
        consumer = Consumer(self.config)
        consumer.assign([TopicPartition(self.topic, p, offset) for p, offset in self.start_offsets.items()])
        try:
            while not self._done():
                for msg in consumer.consume(500, 0.5):
                    if msg.error():
                        continue
                    self._positions[msg.partition()] = msg.offset() + 1
                    decoded = verify.decode(msg.value())
                    if decoded and decoded[0] == self.run_id:
                        self.records.append((msg.partition(), msg.offset(), decoded[2], time.monotonic()))
            consumer.poll(1.2)  # one more statistics report
        finally:
            consumer.close()


def partition_leaders(config, topic):
    """{partition: leader id} of topic, from the cluster's metadata; an unknown topic stops the run."""
    probe = Consumer({"group.id": "loadtest-meta", **config})
    try:
        meta = probe.list_topics(topic, timeout=30).topics[topic]
        if meta.error is not None:
            raise SystemExit(f"loadtest: topic {topic!r}: {meta.error.str()}")
        return {p: m.leader for p, m in meta.partitions.items()}
    finally:
        probe.close()


def end_offsets(config, topic, partitions):
    consumer = Consumer({"group.id": "loadtest-offsets", **config})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in partitions}
    finally:
        consumer.close()


def broker_racks(config):
    """{broker id: rack} from the cluster's metadata."""
    # Keep the client referenced until the answer is in: a client collected
    # before its future resolves is destroyed, and the future fails with _DESTROY.
    admin = AdminClient(config)
    described = admin.describe_cluster(request_timeout=30).result(timeout=30)
    return {node.id: node.rack for node in described.nodes}
