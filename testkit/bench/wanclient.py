"""One client of the WAN benchmark, run inside a DC (testkit.dcnet.DcClient): a paced producer or a timing consumer.

    python -m testkit.bench.wanclient produce --bootstrap-servers H:P,... --client-config F --topic bench \\
        --dc dc1 (--partitions 0,3 | --leader-local | --all) --rate 200 --seconds 30 --warmup 5 \\
        [--client confluent-kafka|per-partition|kafka-python] [--set KEY=VALUE ...]
    python -m testkit.bench.wanclient consume --bootstrap-servers H:P,... --client-config F --topic bench \\
        --dc dc2 [--rack dc2] --partitions 0,3 --seconds 40

The producer writes acks=all, idempotent records of --size bytes whose value
starts with the CLOCK_MONOTONIC time it was handed to the client (the host's
clock, shared by every network namespace on it), at --rate records per
second, round robin over its partitions. With --leader-local it writes only
to the partitions whose leader is in --dc, read again from the metadata each
second, so it follows leaders that move. The consumer reads from the end of
its partitions (with client.rack --rack, from its own DC's replicas; without,
from the leaders) and times each record from that clock to its arrival.

The producer is one librdkafka producer (--client confluent-kafka), the
project's testkit.producer.PerPartitionProducer (--client per-partition: a
librdkafka producer per partition) or its KafkaPythonProducer (--client
kafka-python: every partition of a broker in one request). librdkafka's
statistics, each second, split a record's time per broker: the client
queue (int_latency), the wait for a request slot (outbuf_latency) and the
request's round trip (rtt). kafka-python's metrics give, over the run, its
records' mean and longest wait to be sent and each broker's request latency.

Each prints one JSON line: latencies split into the warm-up (the first
--warmup seconds: metadata, the producer id, the connections) and the steady
state, the time to the first acknowledgement, every write's outcome, the
steady state's breakdown per broker, and for the consumer the bytes fetched
per broker and the lag sampled each second.
"""

from __future__ import annotations

import argparse
import json
import signal
import struct
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_group_source import read_client_config
from testkit.loadtest import harness
from testkit.producer import KafkaPythonProducer, PerPartitionProducer, from_librdkafka

HEADER = struct.Struct("!QQ")  # monotonic ns when produced, sequence


def percentiles(values):
    values = sorted(values)
    if not values:
        return {"n": 0}

    def at(q):
        return round(values[min(len(values) - 1, int(q * len(values)))], 2)

    return {"n": len(values), "p50": at(0.5), "p90": at(0.9), "p99": at(0.99), "max": round(values[-1], 2)}


class LeaderLocal:
    """The partitions of a topic whose leader is in a DC, read again from the metadata at most each second."""

    def __init__(self, config, topic, dc):
        self.admin = AdminClient(config)
        self.topic, self.dc = topic, dc
        self.racks = harness.broker_racks(config)
        self.partitions, self.read_at, self.moves, self.unread = [], 0.0, 0, 0

    def current(self):
        now = time.monotonic()
        if now - self.read_at >= 1.0:
            self.read_at = now
            try:
                meta = self.admin.list_topics(self.topic, timeout=10).topics[self.topic]
            except KafkaException:
                if not self.partitions:
                    raise
                self.unread += 1  # a node restarting: write on to the partitions known, read again in a second
                return self.partitions
            local = sorted(p for p, m in meta.partitions.items() if self.racks.get(m.leader) == self.dc)
            if local and local != self.partitions:
                self.moves += 1 if self.partitions else 0
                self.partitions = local
        return self.partitions


# librdkafka's per-broker window statistics that split a record's time (microseconds in its statistics).
BREAKDOWN = ("int_latency", "outbuf_latency", "rtt")


def broker_windows(report):
    """{broker id: {kind: (count, p50 ms, p99 ms)}} of one librdkafka statistics report (its JSON, parsed): the
    window since the last report of each BREAKDOWN kind that saw a request, for the brokers with an id."""
    out = {}
    for broker in report["brokers"].values():
        node = broker.get("nodeid", -1)
        if node < 0:
            continue
        for kind in BREAKDOWN:
            window = broker.get(kind) or {}
            if window.get("cnt"):
                out.setdefault(node, {})[kind] = (window["cnt"], window["p50"] / 1000, window["p99"] / 1000)
    return out


class Breakdown:
    """librdkafka's statistics, each second, of every producer of this client: per broker, the windows of the
    client queue, the wait for a request slot and the request's round trip, kept from steady_after on."""

    def __init__(self, steady_after):
        self.steady_after, self.windows, self.tx = steady_after, {}, {}

    def __call__(self, raw):
        report = json.loads(raw)
        for broker in report["brokers"].values():
            if broker.get("nodeid", -1) >= 0:
                self.tx[(report["name"], broker["nodeid"])] = broker["txbytes"]
        if time.monotonic() < self.steady_after:
            return
        for node, kinds in broker_windows(report).items():
            for kind, window in kinds.items():
                self.windows.setdefault(node, {}).setdefault(kind, []).append(window)

    def summary(self):
        """{broker: {kind: {"p50", "p99", "n"}}} in ms: the count-weighted median of the windows' p50 and
        99th percentile of their p99, over the steady state."""
        out = {}
        for node, kinds in sorted(self.windows.items()):
            out[str(node)] = {kind: weighted(windows) for kind, windows in kinds.items()}
        return out

    def tx_bytes(self):
        total = {}
        for (_, node), n in self.tx.items():
            total[str(node)] = total.get(str(node), 0) + n
        return dict(sorted(total.items()))


def weighted(windows):
    """{"p50", "p99", "n"} over windows of (count, p50, p99): each window's figures weighted by its count."""

    def at(values, q):
        values = sorted(values)
        total, seen = sum(n for n, _ in values), 0
        for n, value in values:
            seen += n
            if seen >= q * total:
                return round(value, 2)
        return round(values[-1][1], 2)

    return {"p50": at([(n, p50) for n, p50, _ in windows], 0.5), "p99": at([(n, p99) for n, _, p99 in windows], 0.99),
            "n": sum(n for n, _, _ in windows)}  # fmt: skip


def make_producer(client, config, settings, breakdown):
    if client == "kafka-python":
        return KafkaPythonProducer(from_librdkafka({**config, **settings}))
    full = {**config, "statistics.interval.ms": 1000, "stats_cb": breakdown, **settings}
    if client == "per-partition":
        return PerPartitionProducer(full)
    return Producer({"acks": "all", "enable.idempotence": True, **full})


def produce(config, args):
    settings = dict(item.split("=", 1) for item in args.set)
    started = time.monotonic()
    breakdown = Breakdown(started + args.warmup)
    producer = make_producer(args.client, config, settings, breakdown)
    chooser = LeaderLocal(config, args.topic, args.dc) if args.leader_local else None
    if args.all:
        args.partitions = ",".join(str(p) for p in sorted(harness.partition_leaders(config, args.topic)))
    fixed = [int(p) for p in args.partitions.split(",")] if args.partitions else None
    padding = b"x" * max(0, args.size - HEADER.size)
    acked, errors, used = [], [], {}
    first_ack = []

    def callback(sent_ns, seq):
        def delivered(err, msg):
            now_ns = time.monotonic_ns()
            if err is not None:
                errors.append(err.name() if hasattr(err, "name") else type(err).__name__)
                return
            if not first_ack:
                first_ack.append(now_ns)
            acked.append((sent_ns, (now_ns - sent_ns) / 1e6))

        return delivered

    sent = 0
    end = started + args.warmup + args.seconds
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))  # stop writing, flush and report
    while not stop:
        now = time.monotonic()
        if now >= end:
            break
        due = int((now - started) * args.rate) + 1
        while sent < due:
            partitions = chooser.current() if chooser else fixed
            p = partitions[sent % len(partitions)]
            sent_ns = time.monotonic_ns()
            try:
                producer.produce(args.topic, HEADER.pack(sent_ns, sent) + padding, partition=p,
                                 on_delivery=callback(sent_ns, sent))  # fmt: skip
            except BufferError:
                break
            used[p] = used.get(p, 0) + 1
            sent += 1
        producer.poll(min(0.001, max(0.0, started + (sent / args.rate) - time.monotonic())))
    unconfirmed = producer.flush(120)
    producer.poll(1.2)  # one more statistics report
    client_metrics = kafka_python_figures(producer.metrics()) if args.client == "kafka-python" else None
    warm_until_ns = int((started + args.warmup) * 1e9)
    return {
        "role": "producer", "client": args.client, "dc": args.dc, "rate": args.rate, "settings": settings,
        "sent": sent,
        "acknowledged": len(acked), "errors": len(errors), "error_names": sorted(set(errors)),
        "unconfirmed": unconfirmed,
        "first_ack_ms": round((first_ack[0] / 1e9 - started) * 1000, 1) if first_ack else None,
        "warmup": percentiles([ms for t, ms in acked if t < warm_until_ns]),
        "steady": percentiles([ms for t, ms in acked if t >= warm_until_ns]),
        "steady_ms": [round(ms, 3) for t, ms in acked if t >= warm_until_ns],
        "partitions": {str(p): n for p, n in sorted(used.items())},
        "leader_moves_followed": chooser.moves if chooser else None,
        "metadata_reads_failed": chooser.unread if chooser else None,
        "tx_bytes": breakdown.tx_bytes(), "breakdown": breakdown.summary(), "client_metrics": client_metrics,
    }  # fmt: skip


def kafka_python_figures(metrics):
    """From kafka-python's metrics ({group: {name: value}}, their windows about the last minute): its records'
    mean and longest wait to be sent, and each broker's mean and longest request latency, in ms."""
    producer = metrics.get("producer-metrics", {})
    nodes = {}
    for group, values in metrics.items():
        node = group.removeprefix("producer-node-metrics.node-")
        if node != group and node.isdigit():
            nodes[node] = {
                k.replace("-", "_"): round(values[k], 2)
                for k in ("request-latency-avg", "request-latency-max")
                if k in values
            }
    # kafka-python records a batch's queue time in seconds (its drain less its creation, time.monotonic()), whatever
    # the metric's description says; its request latency is in ms.
    queue = {k: producer.get(f"record-queue-time-{k}") for k in ("avg", "max")}
    return {
        **{f"record_queue_time_{k}_ms": None if v is None else round(v * 1000, 2) for k, v in queue.items()},
        "nodes": dict(sorted(nodes.items())),
    }


def consume(config, args):
    rx = {}

    def stats(raw):
        for broker in json.loads(raw)["brokers"].values():
            if broker.get("nodeid", -1) >= 0:
                rx[broker["nodeid"]] = broker["rxbytes"]

    rack = {"client.rack": args.rack} if args.rack else {}
    consumer = Consumer({
        **config, **rack, "group.id": f"bench-wan-{args.dc}", "enable.auto.commit": False,
        "statistics.interval.ms": 1000, "stats_cb": stats, "fetch.wait.max.ms": args.fetch_wait_ms,
    })  # fmt: skip
    partitions = [int(p) for p in args.partitions.split(",")]
    ends = harness.end_offsets(config, args.topic, partitions)
    consumer.assign([TopicPartition(args.topic, p, ends[p]) for p in partitions])
    started = time.monotonic()
    warm_until_ns = int((started + args.warmup) * 1e9)
    e2e, lags = [], []
    next_lag = started + args.warmup
    try:
        while time.monotonic() < started + args.warmup + args.seconds:
            # One record at a time: poll returns as soon as one is there, where consume(n, t) would wait for n.
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None and len(msg.value() or b"") >= HEADER.size:
                sent_ns, _ = HEADER.unpack_from(msg.value())
                e2e.append((sent_ns, (time.monotonic_ns() - sent_ns) / 1e6))
            if time.monotonic() >= next_lag:
                next_lag += 1.0
                positions = consumer.position([TopicPartition(args.topic, p) for p in partitions])
                lag = 0
                for tp in positions:
                    _, high = consumer.get_watermark_offsets(TopicPartition(args.topic, tp.partition), timeout=5,
                                                             cached=False)  # fmt: skip
                    lag += max(0, high - tp.offset) if tp.offset >= 0 else 0
                lags.append(lag)
        consumer.poll(1.2)  # one more statistics report
    finally:
        consumer.close()
    return {
        "role": "consumer", "dc": args.dc, "rack": args.rack,
        "warmup": percentiles([ms for t, ms in e2e if t < warm_until_ns]),
        "steady": percentiles([ms for t, ms in e2e if t >= warm_until_ns]),
        "steady_ms": [round(ms, 3) for t, ms in e2e if t >= warm_until_ns],
        "lag_records": percentiles(lags), "rx_bytes": {str(b): n for b, n in sorted(rx.items())},
    }  # fmt: skip


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.bench.wanclient", description=__doc__.splitlines()[0])
    p.add_argument("action", choices=("produce", "consume"))
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--topic", default="bench")
    p.add_argument("--dc", required=True, help="the DC this client sits in")
    p.add_argument("--partitions", help="comma-separated partitions")
    p.add_argument("--leader-local", action="store_true", help="produce: only to partitions led from --dc")
    p.add_argument("--all", action="store_true", help="produce: to every partition of the topic")
    p.add_argument(
        "--client",
        choices=("confluent-kafka", "per-partition", "kafka-python"),
        default="confluent-kafka",
        help="produce: one librdkafka producer, testkit.producer's one per partition, or its kafka-python one",
    )
    p.add_argument("--rack", help="consume: the client.rack (none: read from the leaders)")
    p.add_argument("--rate", type=float, default=200)
    p.add_argument("--size", type=int, default=200)
    p.add_argument("--seconds", type=float, default=30, help="steady-state seconds, after the warm-up")
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--fetch-wait-ms", type=int, default=500, help="consume: fetch.wait.max.ms")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="produce: a producer setting")
    args = p.parse_args(argv)
    if args.action == "produce" and not (args.partitions or args.leader_local or args.all):
        p.error("produce needs --partitions, --leader-local or --all")
    if args.action == "consume" and not args.partitions:
        p.error("consume needs --partitions")
    return args


def main(argv=None):
    args = parse_args(argv)
    config = {"bootstrap.servers": args.bootstrap_servers, **read_client_config(args.client_config)}
    result = produce(config, args) if args.action == "produce" else consume(config, args)
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
