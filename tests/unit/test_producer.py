"""The shipped producers: the per-partition one (its refusals, where it puts records, a producer of its own for each
partition) and kafka-python's (its refusals, its settings from librdkafka's, callbacks served in the caller's poll)."""

import threading

import pytest
from kafka.errors import KafkaTimeoutError, NotEnoughReplicasError

from testkit.producer import (
    KafkaPythonProducer,
    PerPartitionProducer,
    ProducerSettingsError,
    from_librdkafka,
    murmur2,
    partition_for,
)

BASE = {"bootstrap.servers": "b1:9092", "client.rack": "dc1"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [("21", -973932308), ("foobar", -790332482), ("abc", 479470107), ("a-little-bit-long-string", -985981536),
     ("1", -1993445489), ("12", 126087238), ("123", -267702483), ("1234", -1614185708), ("12345", -1188365604)],
)  # fmt: skip
def test_murmur2_is_kafkas_so_keys_land_where_the_java_producer_puts_them(text, expected):
    assert murmur2(text.encode()) == expected


def test_a_keyed_record_goes_to_the_positive_hash_mod_the_partitions():
    assert partition_for("foobar", 8) == (-790332482 & 0x7FFFFFFF) % 8
    assert partition_for(b"foobar", 8) == partition_for("foobar", 8)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"acks": "1"}, "acks=1: an idempotent stretch producer writes with acks=all"),
        ({"request.required.acks": 0}, "request.required.acks=0: an idempotent stretch producer"),
        ({"enable.idempotence": False}, "enable.idempotence=false: a retried write could then be written twice"),
        ({"max.in.flight.requests.per.connection": 6}, "max.in.flight.requests.per.connection=6: idempotence keeps"),
        ({"lnger.ms": 5}, "unknown setting(s) lnger.ms: give librdkafka producer settings only"),
        ({"partitioner": "random"}, "partitioner: the producer places records itself"),
    ],
)
def test_a_bad_setting_is_refused_before_anything_is_made(extra, message):
    made = []
    with pytest.raises(ProducerSettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        PerPartitionProducer({**BASE, **extra}, make_producer=made.append, make_admin=made.append)
    assert made == []


def test_no_bootstrap_servers_is_refused():
    with pytest.raises(ProducerSettingsError, match="bootstrap.servers is missing"):
        PerPartitionProducer({"client.rack": "dc1"})


class FakeProducer:
    def __init__(self, config):
        self.config, self.records, self.flushed = config, [], 0

    def produce(self, topic, value, **kwargs):
        self.records.append((topic, value, kwargs["partition"], kwargs["key"]))

    def poll(self, timeout):
        return 0

    def flush(self, timeout):
        self.flushed += 1
        self.records.clear()
        return 0

    def __len__(self):
        return len(self.records)


class FakeAdmin:
    def __init__(self, config):
        self.config = config

    def list_topics(self, topic, timeout):
        class Meta:
            error, partitions = None, dict.fromkeys(range(4))

        return type("Topics", (), {"topics": {"orders": Meta}})()


def test_each_partition_gets_a_producer_of_its_own_with_the_stretch_settings():
    producer = PerPartitionProducer(BASE, make_producer=FakeProducer, make_admin=FakeAdmin)
    for i in range(8):
        producer.produce("orders", b"v%d" % i)  # no key: the partitions in turn
    producer.produce("orders", b"k", key="foobar")
    made = producer.producers
    assert sorted(made) == [("orders", p) for p in range(4)]
    assert [r[2] for r in made[("orders", 0)].records] == [0, 0]
    assert made[("orders", partition_for("foobar", 4))].records[-1][3] == "foobar"
    config = made[("orders", 0)].config
    assert config["enable.idempotence"] is True
    assert config["acks"] == "all"
    assert config["max.in.flight.requests.per.connection"] == 1
    # A lost leader's connection is retried every second at most, not every 10 s (librdkafka's default), so
    # the producer asks for the new leaders within a second of the controllers electing them.
    assert config["reconnect.backoff.max.ms"] == 1000
    assert config["client.rack"] == "dc1"
    assert len(producer) == 9
    assert producer.flush(5) == 0
    assert all(p.flushed == 1 for p in made.values())


def test_the_metadata_read_gets_only_the_connection_settings():
    seen = []

    def admin(config):
        seen.append(config)
        return FakeAdmin(config)

    producer = PerPartitionProducer({**BASE, "sasl.username": "u", "linger.ms": 20}, FakeProducer, admin)
    producer.produce("orders", b"x")
    assert seen == [{"bootstrap.servers": "b1:9092", "client.rack": "dc1", "sasl.username": "u"}]


KP_BASE = {"bootstrap_servers": "b1:9092"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"acks": 1}, "acks=1: an idempotent stretch producer writes with acks=all"),
        ({"enable_idempotence": False}, "enable_idempotence=false: a retried write could then be written twice"),
        ({"max_in_flight_requests_per_connection": 6}, "max_in_flight_requests_per_connection=6: idempotence"),
        ({"linger.ms": 5}, "unknown setting(s) linger.ms: give kafka-python KafkaProducer settings only"),
        ({"bootstrap_servers": ""}, "bootstrap_servers is missing"),
    ],
)
def test_kafka_python_a_bad_setting_is_refused_before_the_producer_is_made(extra, message):
    made = []
    with pytest.raises(ProducerSettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        KafkaPythonProducer({**KP_BASE, **extra}, make_producer=lambda **kw: made.append(kw))
    assert made == []


def test_librdkafkas_settings_become_kafka_pythons_and_an_unmapped_one_is_named():
    assert from_librdkafka({
        "bootstrap.servers": "b1:9093", "security.protocol": "sasl_ssl", "ssl.ca.location": "/ca.pem",
        "ssl.endpoint.identification.algorithm": "https", "sasl.mechanism": "scram-sha-512",
        "sasl.username": "u", "sasl.password": "p", "linger.ms": "5", "max.in.flight.requests.per.connection": "1",
        "acks": "-1", "enable.idempotence": "true",
    }) == {
        "bootstrap_servers": "b1:9093", "security_protocol": "SASL_SSL", "ssl_cafile": "/ca.pem",
        "ssl_check_hostname": True, "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "u",
        "sasl_plain_password": "p", "linger_ms": 5, "max_in_flight_requests_per_connection": 1, "acks": "all",
        "enable_idempotence": True,
    }  # fmt: skip
    assert from_librdkafka({"acks": "1"}) == {"acks": 1}
    assert from_librdkafka({"reconnect.backoff.max.ms": "1000"}) == {"reconnect_backoff_max_ms": 1000}
    with pytest.raises(ProducerSettingsError, match="queue.buffering.max.ms have no kafka-python counterpart"):
        from_librdkafka({"bootstrap.servers": "b", "queue.buffering.max.ms": 5})


class FakeFuture:
    def __init__(self):
        self.callbacks, self.errbacks = [], []

    def add_callback(self, fn):
        self.callbacks.append(fn)

    def add_errback(self, fn):
        self.errbacks.append(fn)


class FakeKafkaProducer:
    """kafka-python's producer as far as KafkaPythonProducer uses it; its futures finish when the test says."""

    def __init__(self, **config):
        self.config, self.sent, self.futures = config, [], []
        self.flush_raises = False

    def send(self, topic, **kwargs):
        self.sent.append((topic, kwargs))
        self.futures.append(FakeFuture())
        return self.futures[-1]

    def flush(self, timeout=None):
        if self.flush_raises:
            raise KafkaTimeoutError("not flushed")


def maker(made):
    """A make_producer that keeps what it made in made."""

    def make(**config):
        made.append(FakeKafkaProducer(**config))
        return made[-1]

    return make


def test_kafka_python_runs_with_the_stretch_settings_and_passes_records_on():
    made = []
    producer = KafkaPythonProducer({**KP_BASE, "linger_ms": 20}, make_producer=maker(made))
    producer.produce("orders", b"v", key=b"k", partition=3, timestamp=17, headers={"h": b"1"})
    fake = made[0]
    assert fake.config == {"bootstrap_servers": "b1:9092", "enable_idempotence": True, "acks": "all",
                           "max_in_flight_requests_per_connection": 1, "linger_ms": 20,
                           "batch_size": 256 * 1024, "reconnect_backoff_max_ms": 1000}  # fmt: skip
    assert fake.sent == [("orders", {"value": b"v", "key": b"k", "partition": 3, "timestamp_ms": 17,
                                     "headers": [("h", b"1")]})]  # fmt: skip


def test_kafka_python_callbacks_run_in_the_callers_poll_not_in_the_io_thread():
    made = []
    producer = KafkaPythonProducer(KP_BASE, make_producer=maker(made))
    seen = []

    def delivered(err, metadata):
        seen.append((err, metadata, threading.current_thread() is threading.main_thread()))

    producer.produce("orders", b"a", on_delivery=delivered)
    producer.produce("orders", b"b", on_delivery=delivered)
    assert len(producer) == 2
    ok, failed = made[0].futures
    error = NotEnoughReplicasError()
    io = [threading.Thread(target=ok.callbacks[0], args=("md-a",)), threading.Thread(target=failed.errbacks[0],
                                                                                      args=(error,))]  # fmt: skip
    for thread in io:
        thread.start()
        thread.join()
    assert seen == []  # finished in the I/O thread, not yet served
    assert len(producer) == 2
    assert producer.poll(1) == 2
    assert seen == [(None, "md-a", True), (error, None, True)]
    assert len(producer) == 0
    assert producer.poll(0) == 0


def test_kafka_python_flush_returns_what_is_still_outstanding():
    made = []
    producer = KafkaPythonProducer(KP_BASE, make_producer=maker(made))
    producer.produce("orders", b"a")
    made[0].flush_raises = True
    assert producer.flush(0.1) == 1
    made[0].futures[0].callbacks[0]("md")
    made[0].flush_raises = False
    assert producer.flush(1) == 0
