"""An acks=all, idempotent Python producer whose partitions do not wait for each other over a WAN.

A Kafka broker serves one request per connection at a time: it reads a
request, mutes the connection, and reads the next only once the response is
sent; an acks=all Produce holds it for the far followers' fetch, about one
round trip of the WAN. librdkafka (confluent-kafka) puts one partition in
each ProduceRequest and counts max.in.flight per connection. So the
partitions one producer writes on the same leader broker take turns on one
connection, each turn a round trip: the more partitions a producer writes
on a leader, the longer each record waits in the client (docs/wan.md).

PerPartitionProducer gives each partition a librdkafka producer of its own,
created on its first record: each partition's requests then have a
connection to themselves, and wait only for their own previous request.
Order within a partition and idempotence hold: one producer owns a
partition for its life (and follows its leader when it moves). The cost is
one producer per partition written: its threads, its connections (one to
the partition's leader, and to the bootstrap brokers), its producer id.

    producer = PerPartitionProducer({"bootstrap.servers": "...", "client.rack": "dc1", ...})
    producer.produce("orders", value, key=key, on_delivery=callback)
    producer.poll(0.1)
    producer.flush(30)

Records with a key go to murmur2(key) mod partitions, as Kafka's Java
producer (and librdkafka's murmur2_random) places them; records without
one go to the partitions in turn. Settings are librdkafka's, refused before
anything is sent when one is unknown, when they would turn idempotence or
acks=all off, or when they take over what this class decides (the
partitioner).
"""

from __future__ import annotations

import itertools
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

# What every partition's producer runs with: the stretch's durability (every write in both DCs before it is
# acknowledged, retried without duplicates) and one request per connection in flight, since a second only
# waits at the broker while records gather into the next request anyway.
DEFAULTS = {"enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 1, "linger.ms": 5}
# librdkafka producer settings a caller may give (its CONFIGURATION.md, global and topic properties that apply to a
# producer); anything else is refused rather than passed on unread.
ALLOWED = {
    "bootstrap.servers", "client.id", "client.rack", "security.protocol", "ssl.ca.location", "ssl.ca.pem",
    "ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location", "ssl.key.pem", "ssl.key.password",
    "ssl.endpoint.identification.algorithm", "sasl.mechanism", "sasl.mechanisms", "sasl.username", "sasl.password",
    "enable.idempotence", "acks", "request.required.acks", "max.in.flight.requests.per.connection",
    "max.in.flight", "linger.ms", "queue.buffering.max.ms", "batch.size", "batch.num.messages",
    "queue.buffering.max.messages", "queue.buffering.max.kbytes", "compression.type", "compression.codec",
    "message.timeout.ms", "delivery.timeout.ms", "request.timeout.ms", "retries", "message.send.max.retries",
    "retry.backoff.ms", "retry.backoff.max.ms", "message.max.bytes", "socket.keepalive.enable",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "socket.timeout.ms",
    "socket.connection.setup.timeout.ms",
    "metadata.max.age.ms", "topic.metadata.refresh.interval.ms", "statistics.interval.ms", "stats_cb", "error_cb",
    "log_level", "debug", "logger", "reconnect.backoff.ms", "reconnect.backoff.max.ms", "api.version.request",
}  # fmt: skip
# Settings this class decides itself.
OWNED = {"partitioner", "partitioner_cb", "on_delivery"}
# What a metadata read needs of them: where the cluster is and how to log in.
CONNECTION = {k for k in ALLOWED if k.startswith(("bootstrap.", "client.", "security.", "ssl.", "sasl.", "socket."))}


class ProducerSettingsError(ValueError):
    """Settings the producer refuses, before anything is sent."""


def settings_problems(config):
    """Why config cannot run a PerPartitionProducer; [] when it can."""
    problems = []
    unknown = sorted(k for k in config if k not in ALLOWED and k not in OWNED)
    if unknown:
        problems.append(f"unknown setting(s) {', '.join(unknown)}: give librdkafka producer settings only")
    owned = sorted(k for k in config if k in OWNED)
    if owned:
        problems.append(f"{', '.join(owned)}: the producer places records itself (murmur2 of the key, or in turn)")
    idempotent = str(config.get("enable.idempotence", True)).lower() in ("true", "1")
    if not idempotent:
        problems.append("enable.idempotence=false: a retried write could then be written twice")
    for key in ("acks", "request.required.acks"):
        if key in config and str(config[key]).lower() not in ("all", "-1"):
            problems.append(f"{key}={config[key]}: an idempotent stretch producer writes with acks=all, so every "
                            "acknowledged record is in both DCs")  # fmt: skip
    for key in ("max.in.flight.requests.per.connection", "max.in.flight"):
        if key in config and not 1 <= int(config[key]) <= 5:
            problems.append(f"{key}={config[key]}: idempotence keeps order with 1 to 5 requests in flight")
    if not config.get("bootstrap.servers"):
        problems.append("bootstrap.servers is missing")
    return problems


def murmur2(data):
    """Kafka's murmur2 of bytes, as its Java producer computes it (a 32-bit signed result)."""
    length, seed, m, r = len(data), 0x9747B28C, 0x5BD1E995, 24
    h = (seed ^ length) & 0xFFFFFFFF
    for i in range(0, length - length % 4, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    tail = data[length - length % 4 :]
    if len(tail) >= 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key, partitions):
    """The partition Kafka's Java producer gives a keyed record: murmur2 of the key, made positive, mod partitions."""
    data = key.encode() if isinstance(key, str) else bytes(key)
    return (murmur2(data) & 0x7FFFFFFF) % partitions


class PerPartitionProducer:
    """Produces each partition's records through a librdkafka producer of its own (module docstring)."""

    def __init__(self, config, make_producer=Producer, make_admin=AdminClient):
        problems = settings_problems(config)
        if problems:
            raise ProducerSettingsError("; ".join(problems))
        self.config = {**DEFAULTS, **config}
        self._make_producer, self._make_admin = make_producer, make_admin
        self._producers, self._partitions, self._turns = {}, {}, {}
        self._lock = threading.Lock()

    def partitions(self, topic, timeout=10):
        """The topic's partition count, read once from the metadata."""
        if topic not in self._partitions:
            admin = self._make_admin({k: v for k, v in self.config.items() if k in CONNECTION})
            meta = admin.list_topics(topic, timeout=timeout).topics.get(topic)
            if meta is None or meta.error is not None or not meta.partitions:
                raise ValueError(f"topic {topic!r} has no partitions the cluster reports: {getattr(meta, 'error', '')}")
            self._partitions[topic] = len(meta.partitions)
            self._turns[topic] = itertools.cycle(range(len(meta.partitions)))
        return self._partitions[topic]

    def _producer(self, topic, partition):
        with self._lock:
            producer = self._producers.get((topic, partition))
            if producer is None:
                producer = self._producers[(topic, partition)] = self._make_producer(dict(self.config))
            return producer

    def produce(self, topic, value=None, key=None, partition=None, on_delivery=None, timestamp=0, headers=None):
        """Queues one record for its partition (given, or chosen as Kafka's Java producer would)."""
        if partition is None:
            count = self.partitions(topic)
            partition = partition_for(key, count) if key is not None else next(self._turns[topic])
        kwargs = {"key": key, "partition": partition, "timestamp": timestamp}
        if on_delivery is not None:
            kwargs["on_delivery"] = on_delivery
        if headers is not None:
            kwargs["headers"] = headers
        self._producer(topic, partition).produce(topic, value, **kwargs)

    def poll(self, timeout=0):
        """Serves every partition's delivery callbacks; the events served."""
        producers = list(self._producers.values())
        if not producers:
            return 0
        served = sum(p.poll(0) for p in producers)
        if served or not timeout:
            return served
        return sum(p.poll(timeout / len(producers)) for p in producers)

    def flush(self, timeout=None):
        """Waits until every partition's records are delivered, at most timeout seconds in all (None: as long as it
        takes); the records still queued."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for producer in list(self._producers.values()):
            left = -1 if deadline is None else max(0.0, deadline - time.monotonic())
            producer.flush(left)
        return len(self)

    def __len__(self):
        return sum(len(p) for p in list(self._producers.values()))

    @property
    def producers(self):
        """{(topic, partition): its librdkafka producer}."""
        return dict(self._producers)
