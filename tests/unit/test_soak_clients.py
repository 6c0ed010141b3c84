"""The soak's clients end to end against librdkafka's in-process mock cluster: the producer's acknowledgement log,
the group member's commit log and the full read are what the verifier needs, and a clean run passes it."""

import json
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from testkit.soak import consumer, producer, reader, records, verify

TOPIC = "soak-test"


@pytest.fixture(scope="module")
def bootstrap():
    """A three-broker mock cluster (topics are made on first use, with 4 partitions), alive for the module."""
    owner = Producer({"test.mock.num.brokers": 3})
    brokers = owner.list_topics(timeout=30).brokers.values()
    servers = ",".join(f"{b.host}:{b.port}" for b in brokers)
    Producer({"bootstrap.servers": servers}).list_topics(TOPIC, timeout=30)
    yield servers
    del owner


def test_a_clean_run_of_the_clients_passes_the_verifier(bootstrap, tmp_path):
    prod_args = producer.parse_args(["--bootstrap-servers", bootstrap, "--topic", TOPIC, "--run", "r1", "--name",
                                     "dc1", "--out", str(tmp_path / "producer-dc1.jsonl"), "--rate", "200",
                                     "--keys", "8", "--duration", "30", "--flush-timeout", "30"])  # fmt: skip
    member_args = consumer.parse_args(["--bootstrap-servers", bootstrap, "--topic", TOPIC, "--group", "soak-r1",
                                       "--rack", "dc1", "--out", str(tmp_path / "consumer-dc1.jsonl"),
                                       "--duration", "60"])  # fmt: skip
    writer, member = producer.SoakProducer(prod_args, {}), consumer.Member(member_args, {})
    threads = [threading.Thread(target=writer.run), threading.Thread(target=member.run)]
    for thread in threads:
        thread.start()
    time.sleep(3)
    writer.halt.set()
    threads[0].join(timeout=60)
    time.sleep(3)  # the member reads the rest and commits
    member.halt.set()
    threads[1].join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)

    end = reader.read_topic(bootstrap, {}, TOPIC, "r1", "dc1", tmp_path / "read-dc1.jsonl", timeout=60)
    assert end["complete"]
    produced, _ = records.read_log(tmp_path / "producer-dc1.jsonl")
    assert produced[0]["e"] == "start"
    assert produced[0]["partitions"] == 4
    assert produced[-1]["e"] == "end"
    acks = verify.acknowledgements(produced)
    assert len(acks) == produced[-1]["acked"] == produced[-1]["sent"] > 100
    assert {a["p"] for a in acks} == {0, 1, 2, 3}
    assert all(a["p"] == a["k"] % 4 for a in acks)

    # What the run writes around the clients' logs, for a run of no faults that ended well.
    (tmp_path / "meta.json").write_text(json.dumps({"run_id": "r1", "seed": 1, "duration_s": 3, "dcs": ["dc1"]}))
    (tmp_path / "schedule.json").write_text("[]")
    (tmp_path / "faults.jsonl").write_text("")
    healed = {"undone": {}, "heal": {"healthy": {"passed": True, "problems": []}, "left_behind": {}}}
    (tmp_path / "run.json").write_text(json.dumps({"heal": healed}))
    report = verify.verify(tmp_path)
    assert report["problems"] == []
    assert report["acked"] == len(acks)
    assert report["reads"]["dc1"]["records"] == len(acks)
    assert report["commits"] > 0
    committed, _ = records.read_log(tmp_path / "consumer-dc1.jsonl")
    last = {}
    for e in committed:
        if e["e"] == "commit":
            last[e["p"]] = e["o"]
    assert last == {int(p): n for p, n in end["ends"].items()}  # the group committed everything it read


def test_a_read_that_cannot_reach_the_cluster_ends_incomplete_naming_why_and_fails_the_verdict(tmp_path):
    out = tmp_path / "read-dc1.jsonl"
    end = reader.read_topic("127.0.0.1:1", {}, TOPIC, "r1", "dc1", out, timeout=3)
    assert not end["complete"]
    assert end["error"].startswith("KafkaException")
    events, torn = records.read_log(out)
    assert torn == 0
    assert events == [json.loads(json.dumps(end))]
    read = verify._judge_read("dc1", events, {})
    assert read["problems"] == [f"the dc1 read is incomplete: {end['error']}; partitions read short none, "
                                "records gone to retention none"]  # fmt: skip


def test_a_read_that_does_not_reach_a_partitions_end_by_its_deadline_is_incomplete(bootstrap, tmp_path, monkeypatch):
    """The high watermark says 5 records more than the log gives: the read waits for them until its deadline."""
    flusher = Producer({"bootstrap.servers": bootstrap})
    flusher.produce(TOPIC, b"x", partition=0)
    flusher.flush(30)

    class Longer(Consumer):
        def get_watermark_offsets(self, tp, **kw):
            low, high = super().get_watermark_offsets(tp, **kw)
            return low, high + 5 if tp.partition == 0 else high

    monkeypatch.setattr(reader, "Consumer", Longer)
    end = reader.read_topic(bootstrap, {}, TOPIC, "r1", "dc1", tmp_path / "read-dc1.jsonl", timeout=5)
    assert end["error"] is None
    assert not end["complete"]
    assert end["reached"][0] == end["ends"][0] - 5
    assert all(end["reached"][p] == end["ends"][p] for p in (1, 2, 3))


class Failing:
    """A consumer whose partition 0 answers with an error: its position was to be reset (out of range)."""

    def __init__(self, config):
        assert config["auto.offset.reset"] == "error"

    def list_topics(self, topic, timeout):
        partition = type("P", (), {})()
        meta = type("T", (), {"error": None, "partitions": {0: partition}})()
        return type("M", (), {"topics": {topic: meta}})()

    def get_watermark_offsets(self, tp, **kw):
        return 0, 10

    def assign(self, parts):
        self.parts = parts

    def position(self, parts):
        return parts

    def consume(self, n, timeout):
        error = KafkaError(KafkaError._AUTO_OFFSET_RESET, "fetch failed: offset out of range")
        return [type("Msg", (), {"error": lambda self: error, "partition": lambda self: 0})()]

    def close(self):
        pass


def test_a_partition_whose_position_would_be_reset_ends_the_read_incomplete(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "Consumer", Failing)
    end = reader.read_topic("unused:9092", {}, TOPIC, "r1", "dc1", tmp_path / "read-dc1.jsonl", timeout=5)
    assert not end["complete"]
    assert end["error"].startswith("ReadError: partition 0: _AUTO_OFFSET_RESET")
    assert end["reached"] == {0: 0}


def test_the_producer_logs_what_it_could_not_confirm(tmp_path):
    """Nothing answers at this address: every write stays unconfirmed, and the log says so at its end."""
    out = str(tmp_path / "producer-dc2.jsonl")
    args = producer.parse_args(["--bootstrap-servers", "127.0.0.1:1", "--topic", TOPIC, "--run", "r2", "--name",
                                "dc2", "--out", out, "--flush-timeout", "1"])  # fmt: skip
    writer = producer.SoakProducer(args, {})
    writer.partitions = lambda _producer, timeout=60: 2  # no metadata to be had
    threading.Timer(1.0, writer.halt.set).start()
    writer.run()
    events, _ = records.read_log(tmp_path / "producer-dc2.jsonl")
    unconfirmed = [e for e in events if e["e"] == "unconfirmed"]
    assert events[-1]["e"] == "end"
    assert events[-1]["unconfirmed"] == len(unconfirmed) == events[-1]["sent"] > 0
    assert not any(e["e"] == "ack" for e in events)


def test_the_producer_logs_librdkafka_s_split_of_a_record_s_time_per_broker(tmp_path):
    """Each statistics window (client queue, slot wait, request round trip) in ms, for brokers with an id only;
    a window with no request is left out, and a report with none writes nothing."""
    out = str(tmp_path / "producer-dc1.jsonl")
    args = producer.parse_args(["--bootstrap-servers", "127.0.0.1:1", "--topic", TOPIC, "--run", "r3", "--name",
                                "dc1", "--out", out])  # fmt: skip
    writer = producer.SoakProducer(args, {}, clock=lambda: 42.0)
    assert writer.config["statistics.interval.ms"] == producer.STATISTICS_MS
    window = {"int_latency": {"cnt": 4, "p50": 2000, "p99": 9000}, "outbuf_latency": {"cnt": 0, "p50": 0, "p99": 0},
              "rtt": {"cnt": 4, "p50": 31000, "p99": 36500}}  # fmt: skip
    bootstrap = {"nodeid": -1, "rtt": {"cnt": 1, "p50": 5000, "p99": 5000}}
    writer._statistics(json.dumps({"name": "p", "brokers": {"a:9092/101": {"nodeid": 101, **window},
                                                            "a:9092/bootstrap": bootstrap}}))  # fmt: skip
    writer._statistics(json.dumps({"name": "p", "brokers": {"a:9092/bootstrap": bootstrap}}))
    writer.log.close()
    events, _ = records.read_log(out)
    assert events == [{"e": "breakdown", "t": 42.0,
                       "brokers": {"101": {"int_latency": [4, 2.0, 9.0], "rtt": [4, 31.0, 36.5]}}}]  # fmt: skip


class Here:
    """A stand-in for testkit.dcnet.DcClient: the command runs on this host, in no DC's network."""

    def __init__(self, dc):
        self.dc = dc

    def wrap(self, cmd):
        return cmd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_the_load_starts_a_producer_and_a_member_per_dc_and_stops_them_cleanly(bootstrap, tmp_path, monkeypatch):
    from types import SimpleNamespace

    from testkit.soak import load

    monkeypatch.setattr(load, "DcClient", Here)

    def config_file(directory):
        path = directory / "client.properties"
        path.write_text("# nothing: the mock cluster is plaintext\n")
        return path

    cluster = SimpleNamespace(bootstrap_servers=bootstrap, dcs=["dc1", "dc2"], client_config_file=config_file)
    with load.Clients(cluster, tmp_path, TOPIC, "r3", rate=100, duration=120) as clients:
        clients.wait_writing(timeout=60)
        assert all(clients.alive().values())
        codes = clients.stop(producer_timeout=60, drain=2, member_timeout=60)
    assert codes == {"producer-dc1": 0, "producer-dc2": 0, "consumer-dc1": 0, "consumer-dc2": 0}
    assert not (tmp_path / "client.properties").exists()
    for dc in ("dc1", "dc2"):
        produced, torn = records.read_log(tmp_path / f"producer-{dc}.jsonl")
        assert torn == 0
        assert produced[-1]["e"] == "end"
        assert produced[-1]["acked"] > 0
        committed, _ = records.read_log(tmp_path / f"consumer-{dc}.jsonl")
        assert committed[0]["e"] == "start"
        assert committed[-1]["e"] == "end"
