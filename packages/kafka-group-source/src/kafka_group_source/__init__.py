"""kafka-group: a PySpark streaming source that reads Kafka as a member of a consumer group (KIP-848).

Run the same job in each DC with the same group: the group gives each DC's
job part of the partitions, and every partition of a job that stops, or
whose DC is lost, to the others, which go on from the group's committed
offsets. Each job reads from its own DC's replicas (client.rack).

    import kafka_group_source

    kafka_group_source.register(spark)
    rows = (spark.readStream.format("kafka-group")  # Spark's Kafka options and rows
            .option("kafka.bootstrap.servers", "b1:9093,b2:9093").option("subscribe", "orders")
            .option("kafka.group.id", "orders-etl").option("kafka.client.rack", "dc1")
            .option("client.config", "/etc/orders-etl/client.properties")
            .load())

The public API: NAME, GroupSource, register, prepare, read_client_config,
Settings, SourceError, SettingError; the sink helpers (kafka_group_source.sink)
and the service contract of a deployed job (kafka_group_source.service).
The options, the delivery contract and the measured figures are in the
package's README.
"""

from __future__ import annotations

from .checks import prepare
from .options import NAME, SettingError, Settings, SourceError, read_client_config

__version__ = "0.1.0"

# What needs pyspark is imported when first used: a client that only reads a settings file, or judges a sink,
# needs no Spark.
_SPARK = {"GroupSource": "GroupSource", "register": "register"}


def __getattr__(name):
    if name in _SPARK:
        from . import source

        return getattr(source, _SPARK[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "NAME",
    "GroupSource",
    "SettingError",
    "Settings",
    "SourceError",
    "prepare",
    "read_client_config",
    "register",
]
