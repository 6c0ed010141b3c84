"""The active/active demo job: the same job in each DC's Spark cluster, one consumer group, a sink per DC.

Written against the kafka-group-source package's public API only, as a
team's own job would be. The stretch.kafka collection's spark_stream role
runs it in every DC (an entry of spark_stream_jobs in the inventory), with
that DC's settings in its environment (kafka_group_source.service): the
group gives each DC's job part of the partitions, and all of them to the
other DC's job when one stops or its DC is lost.

Each micro-batch goes to <its directory>/sink (kafka_group_source.sink.BatchFiles),
one row per record: [topic, partition, offset, run, seq, bytes, broker],
with run and seq those of a load-harness record (LOAD:<run>:<partition>:<seq>:...),
else null, and broker the broker that served it (with --fetch-stats). The
source's group member logs its assignments and commits to sink/events.jsonl.

    spark-submit --master spark://m1.dc1:7077 active_active.py [--trigger-seconds 2]
        [--max-records-per-partition 50000] [--starting-offsets earliest] [--fetch-stats]

A bad setting (an unreadable client settings file, an unknown topic, a DC
that is no broker's rack, a session timeout the brokers refuse) stops it
with exit status 2 and a message naming it, before Spark starts; a failed
query exits 1; the stop file ends it with 0 after the batch in flight.
"""

from __future__ import annotations

import argparse
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import kafka_group_source
from kafka_group_source.service import BAD_SETTING, Context, serve
from kafka_group_source.sink import BatchFiles

HEAD_BYTES = 64  # enough of a value to hold a load-harness record's run and sequence number


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="active_active", description=__doc__.splitlines()[0])
    p.add_argument("--trigger-seconds", type=float, default=2.0)
    p.add_argument("--starting-offsets", choices=("earliest", "latest"), default="earliest")
    p.add_argument("--max-records-per-partition", type=int, default=50000, help="per micro-batch; 0: no cap")
    p.add_argument("--fetch-stats", action="store_true", help="record the broker that served each row")
    return p.parse_args(argv)


def load_record(value):
    """(run, seq) columns of a load-harness record's value, null for any other record."""
    fields = F.split(F.substring(value, 1, HEAD_BYTES).cast("string"), ":", 5)
    harness = fields.getItem(0) == F.lit("LOAD")
    return F.when(harness, fields.getItem(1)), F.when(harness, fields.getItem(3).try_cast("long"))


def main(argv=None):
    args = parse_args(argv)
    try:
        context = Context.from_environment()
        options = {
            **context.source_options(),
            "startingOffsets": args.starting_offsets,
            "maxOffsetsPerPartition": str(args.max_records_per_partition),
            "events": context.path("sink/events.jsonl"),
            "includeBroker": "true" if args.fetch_stats else "false",
        }
        kafka_group_source.prepare(options)
    except kafka_group_source.SettingError as exc:
        print(f"active_active: bad setting: {exc}", file=sys.stderr, flush=True)
        return BAD_SETTING

    spark = SparkSession.builder.appName(f"active-active-{context.group}-{context.dc}").getOrCreate()
    kafka_group_source.register(spark)
    records = spark.readStream.format(kafka_group_source.NAME).options(**options).load()
    run, seq = load_record(F.col("value"))
    broker = F.col("broker") if args.fetch_stats else F.lit(None).cast("int").alias("broker")
    rows = records.select(
        "topic", "partition", "offset", run.alias("run"), seq.alias("seq"), F.length("value").alias("bytes"), broker
    )
    query = (
        rows.writeStream.foreachBatch(BatchFiles(context.path("sink"), dc=context.dc))
        .option("checkpointLocation", context.checkpoint)
        .trigger(processingTime=f"{args.trigger_seconds} seconds")
        .start()
    )
    status = serve(query, context)
    spark.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
