"""The kafka-group source's throughput beside Spark's own Kafka source, in one run, on this machine.

`make bench-group-source`: not the testbed, but the package tests' single-node
broker (KRaft on the loopback address, from the testbed's Kafka archive) and a
local[2] SparkSession: two executor cores. One topic of PARTITIONS partitions
holds RECORDS records (a 10-byte key, a VALUE_BYTES value). Each source reads
all of it from the earliest offset into Spark's noop sink, with the same
trigger (processingTime TRIGGER, maxOffsetsPerTrigger PER_TRIGGER), ROUNDS
times, alternating:

- format("kafka"): Spark's own source (spark-sql-kafka-0-10, the JVM's client);
- format("kafka-group"): this source, a fresh group each round;
- the ceiling: a Python data source that hands Spark ready Arrow batches of
  the same rows, no Kafka at all: what PySpark 4.0's Python data source API
  carries here, whatever the source does.

The figures: records/s per executor core (the records over the batches'
processing time, over the two cores), and where the group source's time
goes: per task on the executors (read()'s own timings, kafka_group_source's
KAFKA_GROUP_SOURCE_TIMINGS: waiting in librdkafka's consume, taking the
records apart in Python, the Arrow conversion, and the rest of read(), the
Python worker handing the batches to the JVM), the executor time outside
read(), and the driver's part of each batch (its latestOffset, planning and
commit). reports/bench-group-source.json; the table is in docs/benchmarks.md.
Every wait is bounded.
"""

from __future__ import annotations

import importlib.util
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

from testkit.playbook import REPO

PACKAGE = REPO / "packages" / "kafka-group-source"
PARTITIONS = 2
RECORDS = int(os.environ.get("BENCH_RECORDS", 1_000_000))
VALUE_BYTES = 100
PER_TRIGGER = 250_000
TRIGGER = "1 second"
ROUNDS = 3
CORES = 2
READ_SECONDS = 600  # at most this long for one source to read the topic
DRIVER_PHASES = ("latestOffset", "queryPlanning", "walCommit", "commitOffsets")
REPORT = REPO / "reports" / "bench-group-source.json"


def package_tests_broker():
    """The Broker of the package's tests (packages/kafka-group-source/tests/conftest.py)."""
    spec = importlib.util.spec_from_file_location("group_source_conftest", PACKAGE / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def produce(bootstrap_servers, topic):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 20, "batch.size": 1_000_000,
                         "queue.buffering.max.messages": 1_000_000, "compression.type": "none"})  # fmt: skip
    value = b"v" * VALUE_BYTES
    deadline = time.monotonic() + 600
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, key=b"k%09d" % i, value=value, partition=i % PARTITIONS)
                break
            except BufferError:
                if time.monotonic() > deadline:
                    raise SystemExit("the producer's queue stayed full") from None
                producer.poll(0.1)
    if producer.flush(120) != 0:
        raise SystemExit("the producer did not flush in 120 s")


def session(workdir, conftest):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        dict.fromkeys(
            [str(PACKAGE / "src"), str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        )
    )
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import kafka_group_source

    here = os.getcwd()
    os.chdir(workdir)
    try:
        spark = (
            SparkSession.builder.master(f"local[{CORES}]")
            .appName("bench-group-source")
            .config("spark.driver.memory", "1g")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.local.dir", str(workdir))
            .config("spark.jars", ",".join(str(j) for j in sorted(conftest.SPARK_KAFKA_JARS.glob("*.jar"))))
            .getOrCreate()
        )
    finally:
        os.chdir(here)
    spark.sparkContext.setLogLevel("ERROR")
    kafka_group_source.register(spark)
    from testkit.bench.ceiling import ArrowCeiling

    spark.dataSource.register(ArrowCeiling)
    return spark


def read_all(spark, fmt, options):
    """Read the topic (RECORDS records) with one source into the noop sink; its batches' progress."""
    frame = spark.readStream.format(fmt).options(maxOffsetsPerTrigger=str(PER_TRIGGER), **options).load()
    query = frame.writeStream.format("noop").trigger(processingTime=TRIGGER).queryName(
        f"{fmt.replace('-', '_')}_{uuid.uuid4().hex[:6]}").start()  # fmt: skip
    deadline = time.monotonic() + READ_SECONDS
    try:
        while sum(p["numInputRows"] for p in query.recentProgress) < RECORDS:
            if query.exception() is not None:
                raise SystemExit(f"{fmt}: the query failed: {query.exception()}")
            if time.monotonic() > deadline:
                raise SystemExit(f"{fmt}: read {sum(p['numInputRows'] for p in query.recentProgress)} of {RECORDS} "
                                 f"in {READ_SECONDS} s")  # fmt: skip
            time.sleep(0.5)
    finally:
        progress = list(query.recentProgress)
        query.stop()
    return [p for p in progress if p["numInputRows"]]


def figures(batches):
    records = sum(b["numInputRows"] for b in batches)
    processing = sum(b["durationMs"]["triggerExecution"] for b in batches) / 1000
    add_batch = sum(b["durationMs"].get("addBatch", 0) for b in batches) / 1000
    driver = {phase: round(sum(b["durationMs"].get(phase, 0) for b in batches) / 1000, 3) for phase in DRIVER_PHASES}
    steady = batches[1:] or batches  # the first batch of a query starts its readers
    steady_records = sum(b["numInputRows"] for b in steady)
    steady_seconds = sum(b["durationMs"]["triggerExecution"] for b in steady) / 1000
    return {
        "records": records,
        "batches": len(batches),
        "steady_records_per_s_per_core": round(steady_records / steady_seconds / CORES),
        "processing_s": round(processing, 3),
        "add_batch_s": round(add_batch, 3),
        "driver_s": driver,
        "records_per_s": round(records / processing),
        "records_per_s_per_core": round(records / processing / CORES),
    }


def breakdown(tasks, run):
    """Where the group source's time went, in microseconds per record: on the executors' Python thread (read()'s
    own timings, in wall time and in that thread's CPU time, which the machine's other load does not inflate),
    the executor cores' time outside read(), and the driver's part of the batches."""
    rows = sum(t["rows"] for t in tasks) or 1

    def total(name):
        return sum(t[name] for t in tasks)

    def per_record(seconds):
        return round(seconds / rows * 1e6, 3)

    phases = {"librdkafka_consume": "fetch", "python_take_apart": "extract", "arrow_conversion": "arrow"}
    wall = {label: per_record(total(f"{name}_s")) for label, name in phases.items()}
    cpu = {label: per_record(total(f"{name}_cpu_s")) for label, name in phases.items()}
    wall["python_worker_to_jvm"] = per_record(total("read_s") - sum(total(f"{n}_s") for n in phases.values()))
    cpu["python_worker_to_jvm"] = per_record(total("read_cpu_s") - sum(total(f"{n}_cpu_s") for n in phases.values()))
    cores = CORES * run["add_batch_s"]  # executor core-seconds while the batches ran
    return {
        "tasks": len(tasks),
        "rows": rows,
        "wall_us_per_record": wall,
        "cpu_us_per_record": cpu,
        "executor_outside_read_us_per_record": per_record(max(cores - total("read_s"), 0)),
        "driver_us_per_record": per_record(sum(run["driver_s"].values())),
    }


def main():
    conftest = package_tests_broker()
    from confluent_kafka.admin import AdminClient, NewTopic

    from kafka_group_source.source import TIMINGS

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as workdir:
        workdir = Path(workdir)
        timings = workdir / "timings.jsonl"
        os.environ[TIMINGS] = str(timings)
        (workdir / "kafka").mkdir()
        broker = conftest.Broker(workdir / "kafka").start()
        try:
            topic = f"bench-{uuid.uuid4().hex[:6]}"
            admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
            admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(timeout=30)
            began = time.monotonic()
            produce(broker.bootstrap_servers, topic)
            print(f"produced {RECORDS} records in {time.monotonic() - began:.1f} s", flush=True)
            spark = session(workdir, conftest)
            common = {"kafka.bootstrap.servers": broker.bootstrap_servers, "subscribe": topic,
                      "startingOffsets": "earliest"}  # fmt: skip
            runs = {"kafka": [], "kafka-group": [], "ceiling": []}
            for round_ in range(ROUNDS):
                for fmt in runs:
                    timings.unlink(missing_ok=True)
                    if fmt == "kafka":
                        batches = read_all(spark, "kafka", common)
                    elif fmt == "kafka-group":
                        group = {"kafka.group.id": f"bench-{uuid.uuid4().hex[:6]}", "kafka.client.rack": conftest.RACK}
                        batches = read_all(spark, "kafka-group", {**common, **group})
                    else:
                        batches = read_all(spark, "arrow-ceiling", {"records": str(RECORDS),
                                                                    "partitions": str(PARTITIONS)})  # fmt: skip
                    run = figures(batches)
                    if fmt == "kafka-group":
                        run["breakdown"] = breakdown([json.loads(x) for x in timings.read_text().splitlines()], run)
                    runs[fmt].append(run)
                    print(f"round {round_ + 1} {fmt:>12}: {run['records_per_s_per_core']:>9} records/s per core, "
                          f"{run['steady_records_per_s_per_core']:>9} after the first batch "
                          f"({run['batches']} batches, {run['processing_s']} s)", flush=True)  # fmt: skip
            spark.stop()
        finally:
            broker.stop()
    report = {
        "setup": {
            "records": RECORDS,
            "value_bytes": VALUE_BYTES,
            "partitions": PARTITIONS,
            "cores": CORES,
            "trigger": TRIGGER,
            "max_offsets_per_trigger": PER_TRIGGER,
            "rounds": ROUNDS,
            "broker": "single node, loopback",
            "spark": "local[2]",
            "load_average_before_after": [round(load_before[0], 1), round(os.getloadavg()[0], 1)],
        },
        "runs": runs,
        "median_records_per_s_per_core": {
            fmt: statistics.median(r["records_per_s_per_core"] for r in found) for fmt, found in runs.items()
        },
        "median_steady_records_per_s_per_core": {
            fmt: statistics.median(r["steady_records_per_s_per_core"] for r in found) for fmt, found in runs.items()
        },
    }
    median = report["median_records_per_s_per_core"]
    report["group_over_spark"] = round(median["kafka-group"] / median["kafka"], 3)
    report["ceiling_over_spark"] = round(median["ceiling"] / median["kafka"], 3)
    steady = report["median_steady_records_per_s_per_core"]
    report["steady_group_over_spark"] = round(steady["kafka-group"] / steady["kafka"], 3)
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2) + "\n")
    headline = ("median_records_per_s_per_core", "median_steady_records_per_s_per_core", "group_over_spark",
                "steady_group_over_spark", "ceiling_over_spark")  # fmt: skip
    print(json.dumps({k: report[k] for k in headline}, indent=2))
    print(json.dumps(runs["kafka-group"][-1]["breakdown"], indent=2))


if __name__ == "__main__":
    main()
