"""PySpark Structured Streaming job: reads a topic as a consumer in its DC and writes what it read to a file sink.

Run by spark-submit (deploy mode client). The Kafka source sets
kafka.client.rack to the DC the job runs in, so its executors fetch from
their own DC's replicas; the checkpoint holds the offsets, so the job stopped
in one DC and started in the other from the same checkpoint resumes where it
stopped (one set of offsets across the stretch cluster).

Each micro-batch is written by the driver (foreachBatch) to
<sink>/batch-<id>.jsonl by the kafka-group source's sink helper
(kafka_group_source.sink.BatchFiles), replaced whole when Spark replays the
batch after a restart, so the sink holds each batch exactly once. A row is
[topic, partition, offset, run, seq, bytes] (run and seq from a load-harness
record; null for anything else). <sink>/batches.jsonl logs each batch as it
is written: its id, its records, the wall time and the DC that wrote it.
testkit/streamsink.py judges the sink.

    spark-submit --master spark://m1:7077 --jars <spark-sql-kafka jars> .../kafka_smoke/spark_app.py \
        kafka_smoke.stream_job \
        --bootstrap-servers h:9093 --topic load --client-rack dc1 --client-config c.properties \
        --checkpoint /data/cp --sink /data/sink --stop-file /data/stop

Runs until the stop file exists (then stops after the batch in flight).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafka_group_source import read_client_config
from kafka_group_source.sink import BatchFiles

from .job import java_settings


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--client-rack", required=True, help="the DC the job runs in")
    parser.add_argument("--client-config", metavar="FILE", help="consumer settings (security), key=value lines")
    parser.add_argument("--checkpoint", required=True, help="the query's checkpoint directory (offsets)")
    parser.add_argument("--sink", required=True, help="the directory the batches are written to")
    parser.add_argument("--stop-file", required=True, help="the job stops once this file exists")
    parser.add_argument("--trigger-seconds", type=float, default=2.0)
    parser.add_argument("--max-offsets-per-trigger", type=int, default=20000)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.appName(f"kafka-stream-{args.client_rack}").getOrCreate()
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
        # A lost offset range fails the query instead of being skipped.
        .option("failOnDataLoss", "true")
        .option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
        .option("kafka.client.rack", args.client_rack)
    )
    for key, value in java_settings(read_client_config(args.client_config)).items():
        reader = reader.option(f"kafka.{key}", value)
    fields = F.split(F.col("value").cast("string"), ":")
    harness = fields.getItem(0) == F.lit("LOAD")
    rows = reader.load().select(
        "topic",
        "partition",
        "offset",
        F.when(harness, fields.getItem(1)).alias("run"),
        F.when(harness, fields.getItem(3).cast("long")).alias("seq"),
        F.length("value").alias("bytes"),
    )
    query = (
        rows.writeStream.foreachBatch(BatchFiles(Path(args.sink), dc=args.client_rack))
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime=f"{args.trigger_seconds} seconds")
        .start()
    )
    stop = Path(args.stop_file)
    while not stop.exists():
        if query.awaitTermination(1):
            break  # the query ended by itself: an error, raised below
    query.stop()
    if query.exception():
        print(f"the streaming query failed: {query.exception()}", file=sys.stderr)
        spark.stop()
        return 1
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
