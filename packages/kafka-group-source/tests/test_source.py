"""The source against a real broker on a local SparkSession: it reads every record, and holds its delivery
contract through a restart and a handover between two jobs of one group.

Two queries in one SparkSession are two jobs: each has its own group member
in the driver's Python process of its query, so two queries of one group
share the partitions as two DCs' jobs do.
"""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType
from pyspark.sql import functions as F

import kafka_group_source
from kafka_group_source import delivery
from kafka_group_source.plan import key
from kafka_group_source.sink import BatchFiles, parse_lines, read_sink

PARTITIONS = 4
CAP = 40  # maxOffsetsPerPartition: a batch's records of one partition, and so a handover's duplicates
# Short enough that a job which leaves is replaced within seconds, within the test broker's floors.
GROUP_CONFIGS = {"group.session.timeout.ms": "6000", "group.heartbeat.interval.ms": "500"}
WAIT_SECONDS = 120


def wait_until(check, timeout=WAIT_SECONDS, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)


def new_topic(broker):
    name = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(timeout=30)

    def whole():
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        return topic is not None and topic.error is None and len(topic.partitions) == PARTITIONS

    assert wait_until(whole, timeout=30), f"topic {name} never showed {PARTITIONS} partitions"
    return name


def produce(broker, topic, per_partition):
    """Write per_partition records to each partition; the (topic, partition, offset) of each acknowledged one."""
    acked, errors = set(), []

    def delivered(err, msg):
        if err:
            errors.append(str(err))
        else:
            acked.add((msg.topic(), msg.partition(), msg.offset()))

    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 5})
    for i in range(per_partition):
        for p in range(PARTITIONS):
            producer.produce(topic, value=f"{p}:{i}".encode(), partition=p, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert not errors, errors
    return acked


class Job:
    """One job of the group: a streaming query from the kafka-group source to a BatchFiles sink."""

    def __init__(self, spark, broker, topic, group, workdir, name, **extra):
        self.sink, self.name = workdir / name / "sink", name
        options = {
            "kafka.bootstrap.servers": broker.bootstrap_servers,
            "subscribe": topic,
            "kafka.group.id": group,
            "kafka.client.rack": "dc1",
            "startingOffsets": "earliest",
            "events": str(workdir / name / "events.jsonl"),
            "maxOffsetsPerPartition": str(CAP),
            "includeBroker": "true",
            **GROUP_CONFIGS,
            **extra,
        }
        rows = (
            spark.readStream.format(kafka_group_source.NAME)
            .options(**options)
            .load()
            .select("topic", "partition", "offset", F.length("value").alias("bytes"), "broker")
        )
        self.query = (
            rows.writeStream.foreachBatch(BatchFiles(self.sink, dc=name))
            .option("checkpointLocation", str(workdir / name / "checkpoint"))
            .trigger(processingTime="1 second")
            .queryName(f"{name}-{uuid.uuid4().hex[:6]}")
            .start()
        )
        self.events_path = workdir / name / "events.jsonl"

    def keys(self):
        files, _ = read_sink(self.sink) if self.sink.exists() else ({}, [])
        return {row[:3] for rows in files.values() for row in rows}

    def rows(self):
        files, _ = read_sink(self.sink) if self.sink.exists() else ({}, [])
        return [row for rows in files.values() for row in rows]

    def batches(self):
        return read_sink(self.sink)[1] if self.sink.exists() else []

    def events(self):
        return parse_lines(self.events_path.read_text()) if self.events_path.exists() else []

    def owned(self):
        return delivery.owned_at(delivery.owned_over_time(self.events()), time.time())

    def stop(self):
        self.query.stop()


def verdict(jobs, acked):
    rows_by_dc = {job.name: job.rows() for job in jobs}
    read = {row[:3] for rows in rows_by_dc.values() for row in rows}
    found = delivery.duplicates(rows_by_dc)
    moves = delivery.handovers({job.name: job.events() for job in jobs})
    bound = delivery.duplicate_bound(found["duplicates_by_partition"], moves, {job.name: job.batches() for job in jobs})
    # The bound by the batches seen, and by the cap, which no batch can exceed: a re-read from anywhere before
    # the group's committed offset would make its own batch as large as its duplicates.
    capped = {name: n for name, n in found["duplicates_by_partition"].items() if n > CAP * len(moves.get(name, []))}
    return {"missing": sorted(acked - read), **found, "handovers": moves, "bound": bound, "over_cap": capped}


def test_a_job_reads_every_record_once_and_a_restart_repeats_at_most_its_last_batch(spark, broker, tmp_path):
    topic, group = new_topic(broker), f"etl-{uuid.uuid4().hex[:6]}"
    acked = produce(broker, topic, 100)
    job = Job(spark, broker, topic, group, tmp_path, "first")
    try:
        assert wait_until(lambda: acked <= job.keys()), f"{len(acked - job.keys())} records never read"
        first = verdict([job], acked)
        assert first["duplicates"] == 0, first
        # Capped at 40 records per partition, the 100 of each took three batches.
        assert max(b["records"] for b in job.batches()) <= CAP * PARTITIONS
        assert {b for rows in [job.rows()] for *_k, _size, b in rows} == {1}, "fetch.stats names the broker"
        assert {row[3] for row in job.rows()} == {len("0:0"), len("0:10")}
    finally:
        job.stop()

    # The same job started again from its checkpoint: a new member of the group, which starts each partition
    # at the group's committed offset, up to one batch behind what the job had read.
    acked |= produce(broker, topic, 20)
    again = Job(spark, broker, topic, group, tmp_path, "first")
    try:
        assert wait_until(lambda: acked <= again.keys()), f"{len(acked - again.keys())} records never read"
    finally:
        again.stop()
    result = verdict([again], acked)
    assert result["missing"] == []
    assert all(b["within"] for b in result["bound"].values()), result
    assert result["over_cap"] == {}, result


def test_two_jobs_of_one_group_split_the_partitions_and_one_takes_over_when_the_other_stops(spark, broker, tmp_path):
    topic, group = new_topic(broker), f"etl-{uuid.uuid4().hex[:6]}"
    acked = produce(broker, topic, 50)
    first = Job(spark, broker, topic, group, tmp_path, "dc1")
    second = Job(spark, broker, topic, group, tmp_path, "dc2")
    jobs = [first, second]
    try:
        everything = {key(topic, p) for p in range(PARTITIONS)}
        split = wait_until(lambda: first.owned() | second.owned() == everything and first.owned() and second.owned())
        assert split, {"dc1": first.owned(), "dc2": second.owned()}
        acked |= produce(broker, topic, 50)
        assert wait_until(lambda: acked <= first.keys() | second.keys())

        # The second job stops: it leaves the group, and the first takes every partition it owned.
        owned = second.owned()
        stopped_at = time.time()
        second.stop()
        acked |= produce(broker, topic, 50)
        assert wait_until(lambda: acked <= first.keys() | second.keys()), "the first job did not take over"
        taken = delivery.takeover(first.batches(), owned, stopped_at)
        assert taken["not_taken"] == [], taken
        assert first.owned() == everything
    finally:
        for job in jobs:
            job.stop()
    result = verdict(jobs, acked)
    assert result["missing"] == []
    assert result["handovers"], "no partition changed owner: the test proved nothing about handovers"
    assert all(b["within"] for b in result["bound"].values()), result
    assert result["over_cap"] == {}, result


def test_the_group_configs_are_set_on_the_group(broker):
    topic, group = new_topic(broker), f"etl-{uuid.uuid4().hex[:6]}"
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic, "kafka.group.id": group,
               "kafka.client.rack": "dc1", **GROUP_CONFIGS}  # fmt: skip
    kafka_group_source.prepare(options)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    resource = ConfigResource(ResourceType.GROUP, group)
    found = next(iter(admin.describe_configs([resource]).values())).result(timeout=30)
    assert found["consumer.session.timeout.ms"].value == "6000"
    assert found["consumer.heartbeat.interval.ms"].value == "500"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"kafka.client.rack": "dc9"}, "client.rack 'dc9' is no broker's rack (the brokers' racks are: dc1)"),
        ({"subscribe": "no-such-topic"}, "topic 'no-such-topic' does not exist"),
        ({"group.session.timeout.ms": "1000", "group.heartbeat.interval.ms": "500"}, "the brokers refused"),
    ],
    ids=["dc not a rack", "missing topic", "session below the brokers' floor"],
)
def test_prepare_refuses_a_bad_setting_by_name(broker, extra, message):
    topic = new_topic(broker)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic, "kafka.group.id": "etl-refused",
               "kafka.client.rack": "dc1", **extra}  # fmt: skip
    with pytest.raises(kafka_group_source.SettingError) as refused:
        kafka_group_source.prepare(options)
    assert message in str(refused.value)


def test_a_job_whose_dc_is_no_rack_fails_its_query_with_the_reason(spark, broker, tmp_path):
    topic = new_topic(broker)
    job = Job(spark, broker, topic, "etl-no-rack", tmp_path, "wrong", **{"kafka.client.rack": "dc9"})
    try:
        ended = wait_until(lambda: job.query.exception() is not None, timeout=90)
        assert ended, "the query ran with a DC that is no broker's rack"
        assert "client.rack 'dc9' is no broker's rack" in str(job.query.exception())
    finally:
        job.stop()


def test_a_pattern_subscription_is_served_by_the_brokers_regular_expressions(broker):
    """subscribePattern: the brokers (KIP-848, RE2J) match every topic's full name, as Spark's Java client does."""
    from kafka_group_source.member import member_for
    from kafka_group_source.options import Settings

    tag = uuid.uuid4().hex[:6]
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    names = [f"pat{tag}-a", f"pat{tag}-b", f"xpat{tag}-c"]
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result(timeout=30)
    options = {"kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.client.rack": "dc1",
               "subscribePattern": f"pat{tag}-.*", "kafka.group.id": f"pattern-{tag}"}  # fmt: skip
    settings = Settings.from_options(options)
    member = member_for(settings)
    try:
        wanted = {key(f"pat{tag}-a", 0), key(f"pat{tag}-b", 0)}
        assert wait_until(lambda: set(member.assignment.owned()) >= wanted, timeout=60), member.assignment.owned()
        time.sleep(2)  # anything else would have come with them
        assert set(member.assignment.owned()) == wanted
    finally:
        member.close()
