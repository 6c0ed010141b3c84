"""A PySpark streaming source whose driver is a member of a Kafka consumer group (kafka_group).

    spark.dataSource.register(GroupSource)
    spark.readStream.format("kafka_group").option("bootstrap.servers", ...).option("topics", "load")
        .option("group.id", "orders-etl").option("client.rack", "dc1").option("client.config", path).load()

Run the same job in each DC with the same group.id: the group gives each
job part of the partitions, and every partition of a job that stops (or
whose DC is lost) to the others, which go on from the group's committed
offsets. Each job reads from its own DC's replicas (client.rack).

Where each part runs (PySpark 4.0's Python Data Source API):
- streamReader() is called more than once and the reader is pickled to the
  executors: it opens nothing until Spark calls it on the driver;
- initialOffset, latestOffset, partitions, commit and stop run in one
  long-lived Python process per query on the driver: the group member
  (groupmember.GroupMember) lives there, across micro-batches;
- read() runs on the executors, on a pickled copy: it reads one
  partition's range with assign() (groupmember.read_range).

Options: bootstrap.servers, topics (comma-separated), group.id,
client.rack (the DC), client.config (a key=value file of librdkafka
settings, on the driver's host and every executor's: credentials never
travel in the plan), starting.offsets (earliest|latest: where a partition
the group has no offset for begins), max.records.per.partition (per batch,
0: no cap), events (a JSON lines file of the member's assignments and
commits, on the driver's host), fetch.stats (true: rows name the broker
that served them), read.timeout.seconds, offsets.timeout.seconds, and
kafka.<librdkafka setting>. The offsets and their reconciliation with the
group's are described in groupplan.
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from .groupmember import Settings, default_consumer, member_for, read_range

SCHEMA = "topic string, partition int, offset long, timestamp long, key binary, value binary, broker int"


class KafkaRange(InputPartition):
    """One partition's [start, end) of a micro-batch: one Spark task."""

    def __init__(self, topic, partition, start, end):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end = topic, partition, start, end


class GroupSource(DataSource):
    @classmethod
    def name(cls):
        return "kafka_group"

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
