"""A read's chunks (member.Chunk) as Arrow record batches of the rows' schema, column by column.

PySpark 4.0 takes the record batches a Python data source's read() yields
as they are; rows (tuples) it would convert value by value in Python.
Needs pyarrow (on the executors, where read() runs).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema


def schema_of(struct):
    """The Arrow schema PySpark reads a StructType's rows in (timestamps in microseconds, UTC)."""
    return to_arrow_schema(struct)


def record_batch(chunk, schema):
    """The chunk's records as a record batch of schema (Settings.columns: Spark's Kafka columns, then headers
    and broker when the schema has them)."""
    n = len(chunk.offsets)
    stamps = pc.multiply(pa.array(chunk.stamps, pa.int64()), 1000)  # ms to the microseconds of Spark's timestamps
    columns = {
        "key": pa.array(chunk.keys, pa.binary()),
        "value": pa.array(chunk.values, pa.binary()),
        "topic": pa.repeat(pa.scalar(chunk.topic, pa.string()), n),
        "partition": pa.repeat(pa.scalar(chunk.partition, pa.int32()), n),
        "offset": pa.array(chunk.offsets, pa.int64()),
        "timestamp": stamps.cast(schema.field("timestamp").type),
        "timestampType": pa.array(chunk.kinds, pa.int32()),
    }
    if "headers" in schema.names:
        columns["headers"] = pa.array(chunk.headers, schema.field("headers").type)
    if "broker" in schema.names:
        columns["broker"] = pa.repeat(pa.scalar(chunk.broker, pa.int32()), n)
    return pa.RecordBatch.from_arrays([columns[name] for name in schema.names], schema=schema)
