"""The producer step: writes the sequenced data set with acks=all and idempotence on."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, Producer, TopicPartition

from . import records
from .checks import SmokeError


def watermarks(bootstrap_servers, topic, partitions, client_config):
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "kafka-smoke-offsets", **client_config})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in partitions}
    finally:
        consumer.close()


def produce(bootstrap_servers, topic, partitions, run_id, per_partition, size, client_config):
    """Write per_partition records to each partition; return the manifest the reader validates against."""
    start = watermarks(bootstrap_servers, topic, partitions, client_config)
    errors = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 20,
            **client_config,
        }
    )

    def on_delivery(err, _msg):
        if err:
            errors.append(str(err))

    began = time.monotonic()
    for seq in range(per_partition):
        for p in partitions:
            value = records.encode(run_id, p, seq, size)
            while True:
                try:
                    producer.produce(
                        topic, value=value, key=f"{p}-{seq}".encode(), partition=p, on_delivery=on_delivery
                    )
                    break
                except BufferError:
                    producer.poll(0.5)
        producer.poll(0)
    remaining = producer.flush(120)
    seconds = time.monotonic() - began
    if remaining and not errors:
        raise SmokeError(
            f"producer step: none of the last {remaining} record(s) was acknowledged in 120 s and no error came "
            "back. If the Kafka clients' log (the .clients.log beside the report) shows 'Failed to acquire "
            "idempotence PID ... Coordinator load in progress', the broker it names cannot get producer ids from "
            "the active controller (restart that broker)."
        )
    if remaining or errors:
        raise SmokeError(f"producer step: {remaining} record(s) unacknowledged, errors: {errors[:5]}")
    end = watermarks(bootstrap_servers, topic, partitions, client_config)
    return {
        "topic": topic,
        "run_id": run_id,
        "record_bytes": size,
        "produce_seconds": round(seconds, 2),
        "partitions": {str(p): {"start": start[p], "end": end[p], "expected": per_partition} for p in partitions},
    }
