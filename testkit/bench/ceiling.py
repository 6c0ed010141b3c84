"""The ceiling of PySpark 4.0's Python data sources on this machine: a streaming source that hands Spark ready
Arrow batches of rows shaped as the kafka-group source's (Spark's Kafka schema, a 10-byte key, a 100-byte value)
and does nothing else. testkit.bench.group_source measures it beside the Kafka sources.

    spark.dataSource.register(ArrowCeiling)
    spark.readStream.format("arrow-ceiling").option("records", "1000000").option("partitions", "2")
         .option("maxOffsetsPerTrigger", "250000").load()
"""

from __future__ import annotations

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kafka_group_source.options import COLUMNS

CHUNK = 10_000  # rows per Arrow batch, as the kafka-group source yields them


class ArrowCeiling(DataSource):
    @classmethod
    def name(cls):
        return "arrow-ceiling"

    def schema(self):
        return ", ".join(f"{name} {kind}" for name, kind in COLUMNS)

    def streamReader(self, schema):
        return CeilingReader(
            int(self.options["records"]), int(self.options["partitions"]), int(self.options["maxoffsetspertrigger"])
        )


class CeilingReader(DataSourceStreamReader):
    def __init__(self, records, partitions, per_trigger):
        self.records, self.partitions_, self.per_trigger, self.at = records, partitions, per_trigger, 0

    def initialOffset(self):
        return {"at": 0}

    def latestOffset(self):
        self.at = min(self.at + self.per_trigger, self.records)
        return {"at": self.at}

    def partitions(self, start, end):
        begin, stop = start["at"], end["at"]
        size = -(-(stop - begin) // self.partitions_)
        return [InputPartition((a, min(a + size, stop))) for a in range(begin, stop, size)]

    def read(self, partition):
        import pyarrow as pa

        from kafka_group_source.arrow import schema_of
        from kafka_group_source.source import struct_of

        schema = schema_of(struct_of(COLUMNS))
        columns = {
            "key": pa.array([b"k%09d" % i for i in range(CHUNK)], pa.binary()),
            "value": pa.array([b"v" * 100] * CHUNK, pa.binary()),
            "topic": pa.array(["bench"] * CHUNK, pa.string()),
            "partition": pa.array([0] * CHUNK, pa.int32()),
            "offset": pa.array(range(CHUNK), pa.int64()),
            "timestamp": pa.array([1_700_000_000_000_000] * CHUNK, pa.int64()).cast(schema.field("timestamp").type),
            "timestampType": pa.array([0] * CHUNK, pa.int32()),
        }
        template = pa.RecordBatch.from_arrays([columns[n] for n in schema.names], schema=schema)
        begin, stop = partition.value
        for at in range(begin, stop, CHUNK):
            yield template.slice(0, min(CHUNK, stop - at))

    def commit(self, end):
        pass
