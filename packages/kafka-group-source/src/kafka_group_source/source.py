"""The PySpark streaming data source whose driver is a member of a Kafka consumer group ("kafka-group").

Where each part runs (PySpark 4.0's Python Data Source API):
- streamReader() is called more than once and the reader is pickled to the
  executors: it opens nothing until Spark calls it on the driver;
- initialOffset, latestOffset, partitions, commit and stop run in one
  long-lived Python process per query on the driver: the group member
  (member.GroupMember) lives there, across micro-batches;
- read() runs on the executors, on a pickled copy: it reads one
  partition's range with assign() (member.read_range).
The offsets and their reconciliation with the group's are described in plan.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from .member import default_consumer, member_for, read_range
from .options import NAME, Settings

SCHEMA = "topic string, partition int, offset long, timestamp long, key binary, value binary, broker int"


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
        return SCHEMA

    def streamReader(self, schema):
        return GroupStreamReader(Settings.from_options(self.options))


class GroupStreamReader(DataSourceStreamReader):
    def __init__(self, settings):
        self.settings = settings
        self._member = None

    def __getstate__(self):
        # The executors get the settings only: the group member stays in the driver's process.
        return {"settings": self.settings, "_member": None}

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
        rows = read_range(
            self.settings, partition.topic, partition.partition, partition.start, partition.end, default_consumer
        )
        return iter(rows)

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
