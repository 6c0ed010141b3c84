"""The PySpark streaming data source whose driver is a member of a Kafka consumer group ("kafka-group").

Where each part runs (PySpark 4.0's Python Data Source API):
- the DataSource is made, and its schema() called, in a Python worker on
  the driver when the DataFrame is loaded (load(), unless a schema is
  given): every option is judged there, with the driver's pyarrow and
  librdkafka's own judgement of the client settings, so a bad option fails
  load() with its name;
- streamReader() is called more than once and the reader is pickled to the
  executors: it opens nothing until Spark calls it on the driver;
- initialOffset, latestOffset, partitions, commit and stop run in one
  long-lived Python process per query on the driver: the group member
  (member.GroupMember) lives there, across micro-batches;
- read() runs on the executors, on a pickled copy: it reads one range of a
  partition with assign() (member.read_range) and hands it to Spark as Arrow
  record batches.
The offsets and their reconciliation with the group's are described in plan.
"""

from __future__ import annotations

import json
import os
import time

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .checks import check_driver
from .member import default_consumer, member_for, read_range
from .options import NAME, SettingError, Settings, SourceError

TYPES = {
    "binary": BinaryType(),
    "string": StringType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "timestamp": TimestampType(),
    "array<struct<key:string,value:binary>>": ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    ),
}
# A file each read() appends its timings to (JSON lines: the librdkafka fetch, taking the records apart, the
# Arrow conversion and the whole read, each in wall and in this thread's CPU seconds), for the benchmark
# (testkit.bench.group_source); unset, none are written.
TIMINGS = "KAFKA_GROUP_SOURCE_TIMINGS"
BATCH_READ = (
    f"the {NAME} source reads streams only (spark.readStream), as a member of a consumer group: a batch read of a "
    'range is format("kafka")\'s, spark.read.format("kafka") with startingOffsets and endingOffsets'
)


def struct(settings):
    """The rows' StructType: Spark's Kafka source's columns, in its order (Settings.columns)."""
    return struct_of(settings.columns())


def struct_of(columns):
    """The StructType of [(name, DDL type)] (options.COLUMNS and the rest)."""
    return StructType([StructField(name, TYPES[kind]) for name, kind in columns])


class KafkaRange(InputPartition):
    """One partition's [start, end) of a micro-batch: one Spark task."""

    def __init__(self, topic, partition, start, end):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


class GroupSource(DataSource):
    """spark.dataSource.register(GroupSource); spark.readStream.format("kafka-group").option(...).load()."""

    @classmethod
    def name(cls):
        return NAME

    def schema(self):
        """The rows' schema, once every option is judged: PySpark 4.0 calls this at load(), in a Python worker
        of the driver, so a bad option (or a driver without pyarrow) fails load() with its name."""
        settings = Settings.from_options(self.options)
        check_driver(settings)
        return struct(settings)

    def reader(self, schema):
        raise SettingError(BATCH_READ)

    def streamReader(self, schema):
        # PySpark 4.0 hides an error raised here under its own (an UnboundLocalError of its runner): a refusal
        # goes to a reader that raises it at Spark's first call instead.
        try:
            settings = Settings.from_options(self.options)
            expected = struct(settings)
            if schema != expected:
                raise SettingError(
                    f"the {NAME} source's rows have Spark's Kafka schema ({expected.simpleString()}), not the one "
                    f"given with .schema() ({schema.simpleString()}): drop .schema(...)"
                )
        except SourceError as exc:
            return Refused(str(exc))
        return GroupStreamReader(settings)


class Refused(DataSourceStreamReader):
    """A stream reader that refuses to run, with the reason, at Spark's first call."""

    def __init__(self, message):
        self.message = message

    def initialOffset(self):
        raise SettingError(self.message)

    def latestOffset(self):
        raise SettingError(self.message)

    def partitions(self, start, end):
        raise SettingError(self.message)

    def read(self, partition):
        raise SettingError(self.message)

    def commit(self, end):
        pass

    def stop(self):
        pass


class GroupStreamReader(DataSourceStreamReader):
    def __init__(self, settings):
        self.settings = settings
        self._member = None
        self._arrow = None

    def __getstate__(self):
        # The executors get the settings only: the group member stays in the driver's process.
        return {"settings": self.settings, "_member": None, "_arrow": None}

    def _driver(self):
        if self._member is None:
            self._member = member_for(self.settings)
        return self._member

    def initialOffset(self):
        self._driver()
        return {}

    def latestOffset(self):
        return self._driver().latest()

    def partitions(self, start, end):
        return [KafkaRange(*r) for r in self._driver().ranges(start, end)]

    def read(self, partition):
        """Arrow record batches of the partition's range: Spark takes them as they are (no row conversion)."""
        from .arrow import record_batch, schema_of

        if self._arrow is None:
            self._arrow = schema_of(struct(self.settings))
        began, began_cpu = time.perf_counter(), time.thread_time()
        timings, rows = {"arrow": 0.0, "arrow_cpu": 0.0}, 0
        for chunk in read_range(
            self.settings, partition.topic, partition.partition, partition.start, partition.end, default_consumer,
            timings=timings,
        ):  # fmt: skip
            converting, converting_cpu = time.perf_counter(), time.thread_time()
            batch = record_batch(chunk, self._arrow)
            timings["arrow"] += time.perf_counter() - converting
            timings["arrow_cpu"] += time.thread_time() - converting_cpu
            rows += batch.num_rows
            yield batch  # Spark's worker hands it to the JVM, on this thread, before it asks for the next
        if os.environ.get(TIMINGS):
            line = {"partition": f"{partition.topic}:{partition.partition}", "start": partition.start,
                    "end": partition.end, "rows": rows, "read_s": time.perf_counter() - began,
                    "read_cpu_s": time.thread_time() - began_cpu, "pid": os.getpid(),
                    **{f"{k}_s": v for k, v in timings.items()}}  # fmt: skip
            with open(os.environ[TIMINGS], "a") as out:
                out.write(json.dumps(line) + "\n")

    def commit(self, end):
        self._driver().commit(end)

    def stop(self):
        if self._member is not None:
            self._member.close()
            self._member = None


def register(spark):
    """Register the source with a SparkSession, under the name "kafka-group"; returns the name."""
    spark.dataSource.register(GroupSource)
    return NAME
