"""A bulk client for the cross-DC traffic measurement: write a known number of bytes, or read a run's records back.

    python -m testkit.loadtest.traffic produce --bootstrap-servers H:P,... --topic traffic --records 20000 \\
        --size 1024 --dc dc1 [--leader-local] [--rate 200] --client-config FILE
    python -m testkit.loadtest.traffic consume --bootstrap-servers H:P,... --topic traffic --from-offsets JSON \\
        [--rack dc1] --client-config FILE

`produce` writes keyless records of --size bytes, acks=all, uncompressed, in
turn to each partition, or with --leader-local only to the partitions whose
leader is in --dc: the writes then cross the DC link only as replication
(or, run in another DC, only the writes and their acks cross); with --rate,
at that many records a second.
`consume` reads every partition from the given offsets to its end, as
client.rack --rack (follower fetching) or without one (from the leaders).
Each prints one JSON line: records, value bytes, and the partitions used.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from kafka_group_source import read_client_config

from . import harness


def leader_local(partition_leaders, racks, dc):
    """The partitions whose leader's rack is dc, in order; an error when there is none."""
    local = sorted(p for p, leader in partition_leaders.items() if racks.get(leader) == dc)
    if not local:
        raise SystemExit(f"loadtest.traffic: no partition has its leader in {dc} ({partition_leaders}, racks {racks})")
    return local


def produce(config, args):
    leaders = harness.partition_leaders(config, args.topic)
    partitions = leader_local(leaders, harness.broker_racks(config), args.dc) if args.leader_local else sorted(leaders)
    producer = Producer(
        {**config, "acks": "all", "enable.idempotence": True, "compression.type": "none", "linger.ms": 20}
    )
    failed = []

    def delivered(err, _msg):
        if err is not None:
            failed.append(err.str())

    value = b"x" * args.size
    began = time.monotonic()
    deadline = began + args.timeout
    for i in range(args.records):
        if args.rate:
            # Paced: the delivery reports are served while the writer waits for its next record's time.
            producer.poll(max(0.0, began + i / args.rate - time.monotonic()))
        while True:
            try:
                producer.produce(args.topic, value, partition=partitions[i % len(partitions)], on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.1)
            if time.monotonic() > deadline:
                raise SystemExit(f"loadtest.traffic: {i} of {args.records} records queued in {args.timeout} s")
        producer.poll(0)
    left = producer.flush(max(1.0, deadline - time.monotonic()))
    if left or failed:
        raise SystemExit(f"loadtest.traffic: {left} records unacknowledged, {len(failed)} failed: {failed[:3]}")
    # What this client wrote where, by its own count, and which broker led each
    # partition when it started: the inputs of the traffic model, kept apart
    # from the brokers' counters the model is checked against.
    sent = [partitions[i % len(partitions)] for i in range(args.records)]
    by_partition = {str(p): sent.count(p) * args.size for p in partitions}
    return {
        "records": args.records,
        "value_bytes": args.records * args.size,
        "partitions": partitions,
        "value_bytes_by_partition": by_partition,
        "leaders": {str(p): leaders[p] for p in partitions},
    }


def consume(config, args):
    starts = {int(p): o for p, o in json.loads(args.from_offsets).items()}
    ends = harness.end_offsets(config, args.topic, sorted(starts))
    rack = {"client.rack": args.rack} if args.rack else {}
    consumer = Consumer(
        {**config, **rack, "group.id": "loadtest-traffic", "enable.auto.commit": False, "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition(args.topic, p, o) for p, o in sorted(starts.items())])
    left = {p: ends[p] - starts[p] for p in starts if ends[p] > starts[p]}
    records = value_bytes = 0
    deadline = time.monotonic() + args.timeout
    try:
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=1):
                if msg.error() is not None:
                    continue
                records += 1
                value_bytes += len(msg.value() or b"")
                if msg.partition() in left and msg.offset() >= ends[msg.partition()] - 1:
                    del left[msg.partition()]
    finally:
        consumer.close()
    if left:
        raise SystemExit(f"loadtest.traffic: partitions {sorted(left)} not read to their end in {args.timeout} s")
    return {"records": records, "value_bytes": value_bytes, "partitions": sorted(starts)}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.loadtest.traffic", description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("produce", "consume"))
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", default="traffic")
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--records", type=int, default=20_000)
    p.add_argument("--size", type=int, default=1024, help="bytes per record's value")
    p.add_argument("--dc", help="the producer's DC (with --leader-local)")
    p.add_argument("--leader-local", action="store_true", help="write only to partitions led from --dc")
    p.add_argument("--rate", type=float, default=0, help="produce: records a second (0: as fast as it can)")
    p.add_argument("--from-offsets", default="{}", help='consume: {"partition": offset, ...} as JSON')
    p.add_argument("--rack", help="consume: the client.rack to read as")
    p.add_argument("--timeout", type=float, default=300, help="seconds, at most")
    args = p.parse_args(argv)
    if args.leader_local and not args.dc:
        p.error("--leader-local needs --dc")
    return args


def main(argv=None):
    args = parse_args(argv)
    config = {"bootstrap.servers": args.bootstrap_servers, **read_client_config(args.client_config)}
    result = produce(config, args) if args.action == "produce" else consume(config, args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
