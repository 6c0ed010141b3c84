"""PySpark smoke job: reads the smoke data set as a bounded batch with Spark's Kafka source.

Run by spark-submit (deploy mode client, so the report lands beside the
driver). It reads exactly the offsets the producer step wrote, with
kafka.client.rack set to the DC it runs for (or unset for the control run),
and writes what it saw per partition; kafka_smoke.records.validation judges it.

    spark-submit --master local[2] --jars <spark-sql-kafka jars> .../kafka_smoke/spark_app.py kafka_smoke.job \
        --manifest manifest.json --bootstrap-servers host:9092 --client-rack dc1 --out seen.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from kafka_group_source import read_client_config


def java_settings(config):
    """The librdkafka settings the smoke test is given, in Kafka's Java client spelling (for the Kafka source)."""
    out = {}
    for key, value in config.items():
        if key == "ssl.ca.location":
            # The certificates themselves, not the file's path: the executors may run on other hosts
            # (a Spark cluster), where the runner's file is not.
            certificates = Path(value).read_text()
            out.update({"ssl.truststore.type": "PEM", "ssl.truststore.certificates": certificates})
        elif key in ("sasl.username", "sasl.password"):
            continue
        else:
            out[key] = value
    if "sasl.username" in config:
        quoted = {k: config[k].replace("\\", "\\\\").replace('"', '\\"') for k in ("sasl.username", "sasl.password")}
        out["sasl.jaas.config"] = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{quoted["sasl.username"]}" password="{quoted["sasl.password"]}";'
        )
    return out


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--manifest", required=True, help="the producer step's manifest (JSON)")
    parser.add_argument("--bootstrap-servers", required=True)
    parser.add_argument("--client-rack", default="", help="the DC to read from; empty for the control run")
    parser.add_argument(
        "--client-config",
        metavar="FILE",
        help="consumer settings (security) as key=value lines, passed to the source as kafka.KEY",
    )
    parser.add_argument("--out", required=True, help="where to write what the job saw (JSON)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    started = time.monotonic()
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    manifest = json.loads(Path(args.manifest).read_text())
    topic, run_id = manifest["topic"], manifest["run_id"]
    partitions = manifest["partitions"]
    spark = SparkSession.builder.appName(f"kafka-smoke-{args.client_rack or 'control'}").getOrCreate()
    spark_ready = time.monotonic()

    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap_servers)
        .option("subscribe", topic)
        .option("startingOffsets", json.dumps({topic: {p: v["start"] for p, v in partitions.items()}}))
        .option("endingOffsets", json.dumps({topic: {p: v["end"] for p, v in partitions.items()}}))
        .option("failOnDataLoss", "true")
    )
    if args.client_rack:
        reader = reader.option("kafka.client.rack", args.client_rack)
    for key, value in java_settings(read_client_config(args.client_config)).items():
        reader = reader.option(f"kafka.{key}", value)

    schema = T.StructType(
        [
            T.StructField("run", T.StringType()),
            T.StructField("p", T.IntegerType()),
            T.StructField("seq", T.LongType()),
            T.StructField("data", T.StringType()),
            T.StructField("sha256", T.StringType()),
        ]
    )
    expected = F.create_map(*[x for p, v in partitions.items() for x in (F.lit(int(p)), F.lit(v["expected"]))])
    rows = reader.load().select(
        "partition", F.length("value").alias("bytes"), F.from_json(F.col("value").cast("string"), schema).alias("r")
    )
    own = (
        (F.col("r.run") == run_id)
        & (F.col("r.p") == F.col("partition"))
        & (F.col("r.seq") >= 0)
        & (F.col("r.seq") < expected[F.col("partition")])
    )
    corrupt = own & (F.sha2(F.unbase64(F.col("r.data")), 256) != F.col("r.sha256"))
    seen = (
        rows.groupBy("partition")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.sum(F.when(own, 1).otherwise(0)).alias("own"),
            F.countDistinct(F.when(own, F.col("r.seq"))).alias("distinct"),
            F.sum(F.when(corrupt, 1).otherwise(0)).alias("corrupt"),
            F.sum("bytes").alias("bytes"),
        )
        .collect()
    )
    finished = time.monotonic()
    observed = {str(r["partition"]): {k: int(r[k] or 0) for k in ("count", "own", "distinct", "corrupt")} for r in seen}
    result = {
        "client_rack": args.client_rack or None,
        "observed": observed,
        "records": sum(v["count"] for v in observed.values()),
        "value_bytes": sum(int(r["bytes"] or 0) for r in seen),
        "spark_startup_seconds": round(spark_ready - started, 2),
        "read_seconds": round(finished - spark_ready, 2),
    }
    Path(args.out).write_text(json.dumps(result, indent=2))
    spark.stop()


if __name__ == "__main__":
    main()
