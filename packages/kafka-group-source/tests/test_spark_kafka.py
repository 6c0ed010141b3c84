"""The source as a user of Spark's own Kafka source (format("kafka"), spark-sql-kafka-0-10) finds it, on a local
SparkSession: a job written for format("kafka") runs with format("kafka-group") by changing the format name and
adding the group and the DC, and both give the same rows; the schema is Spark's; a bad option fails load() with
its name; what the source cannot do (a user schema, a batch read) is refused saying why.

PySpark 4.0.0 makes the Python data source, and calls its schema(), in a Python worker of the driver when the
DataFrame is loaded, unless a schema is given with .schema(): then it calls nothing before start(). A batch
read calls reader() when the first action plans it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.errors import AnalysisException

import kafka_group_source

NAME = kafka_group_source.NAME
# No broker answers there: load() must judge the options without one.
NOWHERE = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "orders"}
GROUP = {"kafka.group.id": "orders-etl", "kafka.client.rack": "dc1"}
PARTITIONS, PER_PARTITION = 2, 60
WAIT_SECONDS = 120


def wait_until(check, timeout=WAIT_SECONDS, interval=0.5):
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(interval)
    return check()


@pytest.fixture(scope="module")
def spark_kafka(spark, spark_kafka_jars):
    """The session, with Spark's own Kafka source on its classpath."""
    if not list(spark_kafka_jars.glob("spark-sql-kafka-*.jar")):
        pytest.fail(
            f"no spark-sql-kafka jars in {spark_kafka_jars}: fetch them (testbed/fetch-jars.sh, run by "
            "`make setup-testbed`) or set SPARK_KAFKA_JARS to a directory of them"
        )
    return spark


def orders_job(spark, source, name, bootstrap_servers, topic, **more):
    """A streaming job written for format("kafka"): only source and more (the group, the DC) change."""
    reader = (
        spark.readStream.format(source)
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("includeHeaders", "true")
        .option("failOnDataLoss", "true")
        .option("maxOffsetsPerTrigger", "50")
    )
    for option, value in more.items():
        reader = reader.option(option, value)
    frame = reader.load()
    query = frame.writeStream.format("memory").queryName(name).trigger(processingTime="500 milliseconds").start()
    return frame, query


def produce(broker, topic):
    """Records with and without keys, values and headers, at known create times, on every partition."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "acks": "all", "linger.ms": 5})
    base = int(time.time() * 1000) - 60_000
    for i in range(PER_PARTITION):
        for p in range(PARTITIONS):
            headers = [("trace", f"t{i}".encode()), ("empty", None)] if i % 3 == 0 else None
            producer.produce(topic, key=None if i % 5 == 0 else f"k{i}".encode(),
                             value=None if i % 7 == 6 else f"{p}:{i}".encode() * (i % 4 + 1),
                             partition=p, timestamp=base + i, headers=headers)  # fmt: skip
    assert producer.flush(30) == 0


def records(spark, name):
    """{(topic, partition, offset): (key, value, timestamp, timestampType, headers)} of a memory sink."""
    out = {}
    for r in spark.table(name).collect():
        headers = None if r.headers is None else tuple((h.key, None if h.value is None else bytes(h.value))
                                                       for h in r.headers)  # fmt: skip
        value = (None if r.key is None else bytes(r.key), None if r.value is None else bytes(r.value), r.timestamp,
                 r.timestampType, headers)  # fmt: skip
        out[(r.topic, r.partition, r.offset)] = value
    return out


def test_a_job_written_for_sparks_kafka_source_runs_as_it_is_and_gives_the_same_rows(spark_kafka, broker):
    topic = f"orders-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
    produce(broker, topic)
    tag = uuid.uuid4().hex[:6]
    theirs, their_query = orders_job(spark_kafka, "kafka", f"kafka_{tag}", broker.bootstrap_servers, topic)
    ours, our_query = orders_job(spark_kafka, NAME, f"group_{tag}", broker.bootstrap_servers, topic,
                                 **{"kafka.group.id": f"orders-{tag}", "kafka.client.rack": "dc1"})  # fmt: skip
    expected = PARTITIONS * PER_PARTITION
    try:
        assert ours.schema == theirs.schema
        for name, query in ((f"kafka_{tag}", their_query), (f"group_{tag}", our_query)):

            def read(name=name, query=query):
                return query.exception() is not None or spark_kafka.table(name).count() >= expected

            assert wait_until(read), f"{name}: {spark_kafka.table(name).count()} of {expected} rows"
            assert query.exception() is None, f"{name}: {query.exception()}"
    finally:
        their_query.stop()
        our_query.stop()
    spark_rows, group_rows = records(spark_kafka, f"kafka_{tag}"), records(spark_kafka, f"group_{tag}")
    assert len(spark_rows) == len(group_rows) == expected, "each record once in each"
    assert group_rows == spark_rows
    # The rows compared hold headers and none, null keys and null values.
    assert {v[4] is None for v in spark_rows.values()} == {True, False}
    assert any(v[0] is None for v in spark_rows.values())
    assert any(v[1] is None for v in spark_rows.values())
    # maxOffsetsPerTrigger held: more than one batch each.
    assert len(their_query.recentProgress) > 1
    assert len(our_query.recentProgress) > 1


def test_the_schema_is_sparks_and_the_broker_only_on_request(spark_kafka):
    for headers in ("false", "true"):
        theirs = spark_kafka.readStream.format("kafka").options(**NOWHERE, includeHeaders=headers).load()
        ours = spark_kafka.readStream.format(NAME).options(**NOWHERE, **GROUP, includeHeaders=headers).load()
        assert ours.schema == theirs.schema
    with_broker = spark_kafka.readStream.format(NAME).options(**NOWHERE, **GROUP, includeBroker="true").load()
    assert with_broker.columns == [*theirs.columns[:-1], "broker"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (NOWHERE, "needs the option(s) kafka.group.id, kafka.client.rack"),
        ({**NOWHERE, **GROUP, "startingOffset": "earliest"}, "unknown option(s) startingoffset (did you mean "
                                                             "startingOffsets?)"),
        ({**NOWHERE, **GROUP, "startingOffsets": "newest"}, "option startingOffsets 'newest' is not earliest"),
        ({**NOWHERE, **GROUP, "assign": '{"orders": [0]}'}, "option assign does not apply to the kafka-group source"),
        ({**NOWHERE, **GROUP, "endingOffsets": "latest"}, "option endingOffsets does not apply"),
        ({**NOWHERE, **GROUP, "kafka.sasl.jaas.config": 'x required password="s3cret";'},
         "option(s) kafka.sasl.jaas.config would put a secret in Spark's plan"),
        ({**NOWHERE, **GROUP, "kafka.ssl.truststore.location": "/etc/t.jks"}, "librdkafka reads no Java truststore"),
        ({**NOWHERE, **GROUP, "kafka.session.timeout.ms": "6000"}, "set group.session.timeout.ms"),
        ({**NOWHERE, **GROUP, "kafka.fetch.wait.max.ms": "soon"}, "option kafka.fetch.wait.max.ms: Invalid value"),
        ({**NOWHERE, **GROUP, "kafka.bootstrap.servers": "a:1", "bootstrap.servers": "b:1"}, "two names of one"),
    ],
)  # fmt: skip
def test_a_bad_option_fails_load_with_its_name(spark_kafka, options, message):
    with pytest.raises(AnalysisException) as refused:
        spark_kafka.readStream.format(NAME).options(**options).load()
    assert message in str(refused.value)
    assert "s3cret" not in str(refused.value)


def test_a_user_schema_is_refused_when_the_query_starts(spark_kafka):
    # PySpark calls nothing of the source at load() when a schema is given: the refusal comes at start().
    frame = spark_kafka.readStream.format(NAME).options(**NOWHERE, **GROUP).schema("value string").load()
    query = frame.writeStream.format("noop").start()
    try:
        assert wait_until(lambda: not query.isActive, timeout=60)
        assert "not the one given with .schema() (struct<value:string>): drop .schema(...)" in str(query.exception())
    finally:
        query.stop()


def test_a_batch_read_is_refused_pointing_to_sparks_source(spark_kafka):
    with pytest.raises(AnalysisException, match="option endingOffsets does not apply"):
        spark_kafka.read.format(NAME).options(**NOWHERE, **GROUP, endingOffsets="latest").load()
    frame = spark_kafka.read.format(NAME).options(**NOWHERE, **GROUP).load()  # the options a stream takes
    with pytest.raises(Exception, match='reads streams only .*spark.read.format\\("kafka"\\) with startingOffsets'):
        frame.count()


def test_a_driver_without_pyarrow_fails_load_saying_so(tmp_path):
    """schema() in a Python without pyarrow (as PySpark's worker on such a driver calls it at load())."""
    shadow = tmp_path / "shadow" / "pyarrow"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'pyarrow'\")\n")
    package = Path(kafka_group_source.__file__).resolve().parents[1]
    code = f"from kafka_group_source.source import GroupSource\nGroupSource({{**{NOWHERE!r}, **{GROUP!r}}}).schema()\n"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(shadow.parent), str(package), os.environ.get("PYTHONPATH", "")]),
    }
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)  # noqa: S603
    assert found.returncode != 0
    assert "SettingError: pyarrow is missing from the driver's Python" in found.stderr, found.stderr[-2000:]
