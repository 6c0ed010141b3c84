"""The per-partition producer: its refusals, where it puts records, and a producer of its own for each partition."""

import pytest

from stretch.producer import PerPartitionProducer, ProducerSettingsError, murmur2, partition_for

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
