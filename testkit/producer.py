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

KafkaPythonProducer is the arrangement docs/wan.md recommends: kafka-python's
producer, which, like Kafka's Java producer, puts every partition a broker
leads into one ProduceRequest. The partitions of a leader then share each
round trip instead of taking turns, with one connection per broker and one
producer id. It has the same produce/poll/flush calls as confluent-kafka's
Producer: delivery callbacks run in the caller's poll() or flush(), never in
kafka-python's I/O thread, where a slow callback would hold every request.

    producer = KafkaPythonProducer({"bootstrap_servers": "...", "security_protocol": "SASL_SSL", ...})
    producer.produce("orders", value, key=key, on_delivery=callback)  # callback(err, RecordMetadata)
    producer.poll(0.1)
    producer.flush(30)

Its settings are kafka-python's (KafkaProducer's keyword arguments);
from_librdkafka() turns a librdkafka configuration into them. They are
refused, before anything is made, as PerPartitionProducer's are.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer
from kafka.errors import KafkaTimeoutError

# What every partition's producer runs with: the stretch's durability (every write in both DCs before it is
# acknowledged, retried without duplicates) and one request per connection in flight, since a second only
# waits at the broker while records gather into the next request anyway.
# A connection to a lost leader is retried every second at most (RECONNECT_BACKOFF_MAX_MS), so the producer asks
# for the new leaders within a second of the controllers electing them (docs/wan.md#the-dc-loss-stall).
RECONNECT_BACKOFF_MAX_MS = 1000
DEFAULTS = {"enable.idempotence": True, "acks": "all", "max.in.flight.requests.per.connection": 1, "linger.ms": 5,
            "reconnect.backoff.max.ms": RECONNECT_BACKOFF_MAX_MS}  # fmt: skip
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


def durability_problems(config, idempotence, acks, in_flight, bootstrap):
    """What in config (under a client library's names for these settings) would turn idempotence or acks=all off,
    or lose where the cluster is."""
    problems = []
    if str(config.get(idempotence, True)).lower() not in ("true", "1"):
        problems.append(f"{idempotence}=false: a retried write could then be written twice")
    for key in acks:
        if key in config and str(config[key]).lower() not in ("all", "-1"):
            problems.append(f"{key}={config[key]}: an idempotent stretch producer writes with acks=all, so every "
                            "acknowledged record is in both DCs")  # fmt: skip
    for key in in_flight:
        if key in config and not 1 <= int(config[key]) <= 5:
            problems.append(f"{key}={config[key]}: idempotence keeps order with 1 to 5 requests in flight")
    if not config.get(bootstrap):
        problems.append(f"{bootstrap} is missing")
    return problems


def settings_problems(config):
    """Why config cannot run a PerPartitionProducer; [] when it can."""
    problems = []
    unknown = sorted(k for k in config if k not in ALLOWED and k not in OWNED)
    if unknown:
        problems.append(f"unknown setting(s) {', '.join(unknown)}: give librdkafka producer settings only")
    owned = sorted(k for k in config if k in OWNED)
    if owned:
        problems.append(f"{', '.join(owned)}: the producer places records itself (murmur2 of the key, or in turn)")
    return problems + durability_problems(
        config, "enable.idempotence", ("acks", "request.required.acks"),
        ("max.in.flight.requests.per.connection", "max.in.flight"), "bootstrap.servers",
    )  # fmt: skip


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


# What KafkaPythonProducer runs with unless told otherwise: as DEFAULTS, under kafka-python's names, and batches
# of up to 256 KiB. With one request in flight a partition sends at most one batch per request round trip, and
# kafka-python's 16 KiB (the Java producer's too) is 80 records of 200 bytes: from the other DC at 100 ms (a
# 300 ms round trip) that held a partition under 300 records/s, and a 500/s producer's records waited 30 s.
# librdkafka's batches go up to 1 MB; kafka-python takes a batch's memory as it fills.
KAFKA_PYTHON_DEFAULTS = {"enable_idempotence": True, "acks": "all", "max_in_flight_requests_per_connection": 1,
                         "linger_ms": 5, "batch_size": 256 * 1024,
                         "reconnect_backoff_max_ms": RECONNECT_BACKOFF_MAX_MS}  # fmt: skip
# librdkafka's names of the settings from_librdkafka() carries over, with kafka-python's name and how the value
# changes on the way.
LIBRDKAFKA_TO_KAFKA_PYTHON = {
    "bootstrap.servers": ("bootstrap_servers", str), "client.id": ("client_id", str),
    "security.protocol": ("security_protocol", str.upper), "ssl.ca.location": ("ssl_cafile", str),
    "ssl.certificate.location": ("ssl_certfile", str), "ssl.key.location": ("ssl_keyfile", str),
    "ssl.key.password": ("ssl_password", str),
    "ssl.endpoint.identification.algorithm": ("ssl_check_hostname", lambda v: str(v).lower() == "https"),
    "sasl.mechanism": ("sasl_mechanism", str.upper), "sasl.mechanisms": ("sasl_mechanism", str.upper),
    "sasl.username": ("sasl_plain_username", str), "sasl.password": ("sasl_plain_password", str),
    "acks": ("acks", lambda v: "all" if str(v) in ("all", "-1") else int(v)),
    "enable.idempotence": ("enable_idempotence", lambda v: str(v).lower() in ("true", "1")),
    "linger.ms": ("linger_ms", int),
    "max.in.flight.requests.per.connection": ("max_in_flight_requests_per_connection", int),
    "batch.size": ("batch_size", int), "compression.type": ("compression_type", str),
    "request.timeout.ms": ("request_timeout_ms", int), "delivery.timeout.ms": ("delivery_timeout_ms", int),
    "reconnect.backoff.ms": ("reconnect_backoff_ms", int),
    "reconnect.backoff.max.ms": ("reconnect_backoff_max_ms", int),
}  # fmt: skip


def from_librdkafka(config):
    """kafka-python's settings for a librdkafka configuration (the project's client configuration files are
    librdkafka's); a key it does not carry over is refused, by name."""
    unknown = sorted(k for k in config if k not in LIBRDKAFKA_TO_KAFKA_PYTHON)
    if unknown:
        raise ProducerSettingsError(f"librdkafka setting(s) {', '.join(unknown)} have no kafka-python counterpart "
                                    f"here: give them as kafka-python settings")  # fmt: skip
    return {LIBRDKAFKA_TO_KAFKA_PYTHON[k][0]: LIBRDKAFKA_TO_KAFKA_PYTHON[k][1](v) for k, v in config.items()}


def kafka_python_problems(config):
    """Why config cannot run a KafkaPythonProducer; [] when it can."""
    problems = []
    unknown = sorted(k for k in config if k not in KafkaProducer.DEFAULT_CONFIG)
    if unknown:
        problems.append(f"unknown setting(s) {', '.join(unknown)}: give kafka-python KafkaProducer settings only")
    return problems + durability_problems(
        config, "enable_idempotence", ("acks",), ("max_in_flight_requests_per_connection",), "bootstrap_servers"
    )


class KafkaPythonProducer:
    """kafka-python's producer (every partition of a broker in one request) behind confluent-kafka's produce, poll
    and flush (module docstring)."""

    def __init__(self, config, make_producer=KafkaProducer):
        problems = kafka_python_problems(config)
        if problems:
            raise ProducerSettingsError("; ".join(problems))
        self._producer = make_producer(**{**KAFKA_PYTHON_DEFAULTS, **config})
        self._done = collections.deque()  # (callback, err, metadata), appended by kafka-python's I/O thread
        self._arrived = threading.Condition()
        self._pending = 0

    def _finished(self, on_delivery, err, metadata):
        with self._arrived:
            self._pending -= 1
            self._done.append((on_delivery, err, metadata))
            self._arrived.notify_all()

    def produce(self, topic, value=None, key=None, partition=None, on_delivery=None, timestamp=0, headers=None):
        """Queues one record (with partition None, kafka-python places it: murmur2 of the key, as the Java
        producer does). on_delivery(err, metadata) is called from poll() or flush(): err None and kafka-python's
        RecordMetadata once the record is acknowledged, or the error and None."""
        with self._arrived:
            self._pending += 1
        try:
            future = self._producer.send(
                topic, value=value, key=key, partition=partition, timestamp_ms=timestamp or None,
                headers=list(headers.items()) if isinstance(headers, dict) else headers,
            )  # fmt: skip
        except BaseException:
            with self._arrived:
                self._pending -= 1
            raise
        future.add_callback(lambda metadata: self._finished(on_delivery, None, metadata))
        future.add_errback(lambda err: self._finished(on_delivery, err, None))

    def poll(self, timeout=0):
        """Calls the delivery callbacks of the records finished, waiting up to timeout seconds for the first; the
        number called."""
        with self._arrived:
            if not self._done and timeout:
                self._arrived.wait(timeout)
            finished = [self._done.popleft() for _ in range(len(self._done))]
        for on_delivery, err, metadata in finished:
            if on_delivery is not None:
                on_delivery(err, metadata)
        return len(finished)

    def flush(self, timeout=None):
        """Waits until every record is acknowledged or failed, at most timeout seconds (None: as long as it takes),
        and calls their callbacks; the records still outstanding."""
        with contextlib.suppress(KafkaTimeoutError):
            self._producer.flush(timeout)
        self.poll(0)
        return len(self)

    def close(self, timeout=None):
        """Sends what is queued and closes the producer's connections (kafka-python's close flushes, within
        timeout), then calls the callbacks of what finished; the records still outstanding."""
        self._producer.close(timeout=timeout)
        self.poll(0)
        return len(self)

    def metrics(self):
        """kafka-python's metrics: {group: {name: value}}."""
        return self._producer.metrics()

    def __len__(self):
        with self._arrived:
            return self._pending + len(self._done)
