"""A Spark job that writes through Spark's own Kafka sink, acks=all, for bench-wan's clients part.

    spark-submit ... sparksink_job.py BOOTSTRAP TOPIC RATE PARTITIONS SECONDS CLIENT_SETTINGS_FILE

Structured Streaming in continuous mode (records are written as they come,
not a micro-batch at a time): the rate source makes RATE rows a second over
PARTITIONS tasks, each row's value its creation time (microseconds), and
Spark's Kafka sink (the Java producer in each executor) writes them with
acks=all, idempotent, one request in flight per connection, linger.ms 5.
The topic stamps each record with the time its leader appended it
(LogAppendTime): the bench reads them back and takes the difference. Runs
SECONDS, then stops. CLIENT_SETTINGS_FILE holds the Java client's security
settings as a JSON object (mode 0600: the password; the CA's certificates
inline, as the executors run on other hosts), passed on as kafka.KEY.
"""

import json
import sys
import tempfile
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F


def main(bootstrap, topic, rate, partitions, seconds, settings_file):
    spark = SparkSession.builder.appName("bench-wan-spark-sink").getOrCreate()
    rows = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", int(rate))
        .option("numPartitions", int(partitions))
        .load()
    )
    out = rows.select(
        F.col("value").cast("string").alias("key"),
        F.unix_micros(F.col("timestamp")).cast("string").alias("value"),
    )
    writer = (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        .option("kafka.max.in.flight.requests.per.connection", "1")
        .option("kafka.linger.ms", "5")
        .option("checkpointLocation", tempfile.mkdtemp(prefix="bench-wan-spark-sink-"))
    )
    for key, value in json.loads(Path(settings_file).read_text()).items():
        writer = writer.option(f"kafka.{key}", value)
    query = writer.trigger(continuous="1 second").start()
    query.awaitTermination(float(seconds))
    query.stop()
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:7])
