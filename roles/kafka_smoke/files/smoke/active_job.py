"""The active/active streaming job: the same job in each DC, one Kafka consumer group, a sink per DC.

Run by spark-submit (deploy mode client) on each DC's Spark cluster, with
the same --group and that DC as --dc; roles/spark_stream runs it as a
systemd service on each DC's Spark master host:

    spark-submit --master spark://m1.dc1:7077 --py-files smoke.zip smoke/spark_app.py smoke.active_job \
        --bootstrap-servers h:9092 --topic load --group stream-active --dc dc1 --client-config c.properties \
        --checkpoint /var/lib/spark-stream/active/checkpoint --sink /var/lib/spark-stream/active/sink \
        --stop-file /var/lib/spark-stream/active/stop

It reads with the kafka_group source (groupsource): the group gives each
DC's job part of the partitions, and all of them to the other DC's job
when one stops or its DC is lost. Each micro-batch goes to <sink> through
groupsink (a file per batch, replaced whole when Spark runs it again).

Before Spark starts, every setting is checked against the cluster; a bad
one (an unreadable or incomplete client settings file, an unknown topic, a
DC that is no broker's rack, a session timeout the brokers refuse) stops
the job with exit status 2 and a message that names it: the service does
not restart on that status. A failed query exits 1 (the service restarts
it); the stop file ends it with 0 after the batch in flight.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from confluent_kafka import KafkaException

from .checks import SmokeError, check_bootstrap, read_client_config
from .groupsink import HEAD_BYTES, parse_head, write_batch

BAD_SETTING = 2


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="smoke.active_job", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", action="append", required=True, help="a topic to read; repeat")
    p.add_argument("--group", required=True, help="the consumer group every DC's job joins")
    p.add_argument("--dc", required=True, help="the DC this job and its executors run in (client.rack)")
    p.add_argument("--client-config", required=True, metavar="FILE", help="librdkafka settings, key=value lines")
    p.add_argument("--checkpoint", required=True, help="this DC's checkpoint directory")
    p.add_argument("--sink", required=True, help="this DC's sink directory")
    p.add_argument("--stop-file", required=True, help="the job stops once this file exists")
    p.add_argument("--trigger-seconds", type=float, default=2.0)
    p.add_argument("--session-timeout-ms", type=int, default=6000, help="the group's consumer.session.timeout.ms")
    p.add_argument("--heartbeat-interval-ms", type=int, default=1000, help="consumer.heartbeat.interval.ms")
    p.add_argument("--starting-offsets", choices=("earliest", "latest"), default="earliest")
    p.add_argument("--max-records-per-partition", type=int, default=50000, help="per micro-batch; 0: no cap")
    p.add_argument("--fetch-stats", action="store_true", help="record the broker that served each row")
    p.add_argument("--ready-file", help="written once the query runs")
    return p.parse_args(argv)


def check_client_config(path):
    """The client settings, refused when unreadable or when a SASL listener's login is missing."""
    config = read_client_config(path)
    protocol = config.get("security.protocol", "plaintext").lower()
    if protocol.startswith("sasl"):
        missing = [k for k in ("sasl.username", "sasl.password") if not config.get(k)]
        if missing:
            raise SmokeError(
                f"the client settings in {path} use {config['security.protocol']} but have no "
                f"{' or '.join(missing)}: the job's Kafka credentials are missing"
            )
    return config


def check_cluster(admin, topics, dc, timeout=15):
    """Every topic exists and dc is a broker rack, from the cluster's metadata."""
    try:
        metadata = admin.list_topics(timeout=timeout)
        nodes = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout).nodes
    except KafkaException as exc:
        raise SmokeError(f"cannot read the cluster's metadata: {exc}") from exc
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            why = f" ({found.error})" if found is not None else ""
            raise SmokeError(f"topic {topic!r} does not exist or may not be described by the job's user{why}")
    racks = sorted({n.rack for n in nodes if n.rack})
    if dc not in racks:
        raise SmokeError(f"DC {dc!r} is no broker's rack (the brokers' racks are: {', '.join(racks) or 'none'})")


def group_settings(session_timeout_ms, heartbeat_interval_ms):
    if heartbeat_interval_ms <= 0 or session_timeout_ms <= heartbeat_interval_ms:
        raise SmokeError(
            f"session timeout {session_timeout_ms} ms must be longer than the heartbeat interval "
            f"{heartbeat_interval_ms} ms"
        )
    return {
        "consumer.session.timeout.ms": str(session_timeout_ms),
        "consumer.heartbeat.interval.ms": str(heartbeat_interval_ms),
    }


def apply_group_settings(admin, group, settings, timeout=15, clock=time.monotonic, sleep=time.sleep):
    """Set the group's session timeout and heartbeat interval (KIP-848 group configs) and read them back.

    With group.protocol=consumer the brokers, not the clients, hold these: every
    DC's job sets the same values. A value outside the brokers' bounds
    (group.consumer.min/max.session.timeout.ms, ...min/max.heartbeat.interval.ms)
    is refused, named.
    """
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    entries = [ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in settings.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    wrong = {}
    try:
        for future in admin.incremental_alter_configs([resource]).values():
            future.result(timeout=timeout)
        # The brokers apply a group config once the controllers have committed it: read until it shows.
        deadline = clock() + timeout
        while True:
            described = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)])
            found = next(iter(described.values())).result(timeout=timeout)
            wrong = {
                k: found[k].value if k in found else None
                for k, v in settings.items()
                if k not in found or found[k].value != v
            }
            if not wrong or clock() > deadline:
                break
            sleep(0.5)
    except KafkaException as exc:
        raise SmokeError(
            f"group {group!r}: the brokers refused {', '.join(f'{k}={v}' for k, v in settings.items())}: {exc}"
        ) from exc
    if wrong:
        raise SmokeError(f"group {group!r}: the brokers still hold {wrong} {timeout} s after setting {settings}")


def check_settings(args, admin_factory):
    """Every check made before Spark starts; raises SmokeError naming the bad setting."""
    config = check_client_config(args.client_config)
    check_bootstrap(args.bootstrap_servers)
    admin = admin_factory({"bootstrap.servers": args.bootstrap_servers, **config})
    check_cluster(admin, args.topic, args.dc)
    apply_group_settings(admin, args.group, group_settings(args.session_timeout_ms, args.heartbeat_interval_ms))


def source_options(args):
    return {
        "bootstrap.servers": args.bootstrap_servers,
        "topics": ",".join(args.topic),
        "group.id": args.group,
        "client.rack": args.dc,
        "client.config": str(Path(args.client_config).resolve()),
        "starting.offsets": args.starting_offsets,
        "max.records.per.partition": str(args.max_records_per_partition),
        "events": str(Path(args.sink) / "events.jsonl"),
        "fetch.stats": "true" if args.fetch_stats else "false",
    }


def batch_writer(sink, dc):
    def write(batch, batch_id):
        rows = []
        for r in batch.collect():
            run, seq = parse_head(r["head"])
            rows.append([r["topic"], r["partition"], r["offset"], run, seq, r["bytes"], r["broker"]])
        write_batch(sink, batch_id, rows, dc)

    return write


def main(argv=None):
    args = parse_args(argv)
    from confluent_kafka.admin import AdminClient

    try:
        check_settings(args, AdminClient)
    except SmokeError as exc:
        print(f"active_job: bad setting: {exc}", file=sys.stderr, flush=True)
        return BAD_SETTING

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from .groupsource import GroupSource

    spark = SparkSession.builder.appName(f"kafka-active-{args.group}-{args.dc}").getOrCreate()
    spark.dataSource.register(GroupSource)
    rows = (
        spark.readStream.format("kafka_group")
        .options(**source_options(args))
        .load()
        .select(
            "topic",
            "partition",
            "offset",
            "broker",
            F.length("value").alias("bytes"),
            F.substring("value", 1, HEAD_BYTES).cast("string").alias("head"),
        )
    )
    query = (
        rows.writeStream.foreachBatch(batch_writer(Path(args.sink), args.dc))
        .option("checkpointLocation", args.checkpoint)
        .trigger(processingTime=f"{args.trigger_seconds} seconds")
        .start()
    )
    if args.ready_file:
        Path(args.ready_file).write_text(f"{time.time()}\n")
    stop = Path(args.stop_file)
    while not stop.exists():
        if query.awaitTermination(1):
            break  # the query ended by itself: an error, reported below
    query.stop()
    failed = query.exception()
    spark.stop()
    if failed:
        print(f"active_job: the streaming query failed: {failed}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
