"""One producer of the soak, run inside a DC (testkit.dcnet.DcClient): keyed, sequenced acks=all writes, every
outcome in its acknowledgement log.

    python -m testkit.soak.producer --bootstrap-servers H:P,... --client-config F --topic soak-RUN --run RUN \\
        --name dc1 --out DIR/producer-dc1.jsonl --stop-file DIR/stop [--rate 50] [--keys 16] [--duration 7200]

Idempotent, acks=all, with a delivery timeout longer than any fault the
soak holds, so the client retries through leader changes and cuts, and only
what it gives up on reaches the application as an error. Key k goes to
partition k mod the partition count, and each key has its own sequence
(0, 1, 2, ...). The log (testkit/soak/records.py) has a line per event:

    start        run, producer, topic, partitions, keys, rate
    ack          k, s, p, o, ts (handed to the client), ta (acknowledged)   o is -1 when the broker gave none
    error        k, s, p, err, fatal, ts, ta                                a delivery the client gave up on
    client_error err, reason, fatal, t                                     the client's own errors
    restarted    t, reason                                                  a new producer after a fatal error
    unconfirmed  k, s, p, ts                                                 neither acknowledged nor failed at the end
    breakdown    t, brokers: {id: {kind: [count, p50, p99]}}                 librdkafka's windows of the last 10 s (ms)
    end          t, sent, acked, errors, unconfirmed

The breakdown splits a record's time per broker as make bench-wan does
(testkit.bench.wanclient.broker_windows): the client queue (int_latency),
the wait for a request slot (outbuf_latency) and the request's round trip
(rtt).

It writes until the stop file appears, it gets SIGTERM, or --duration
passes; then it flushes (at most --flush-timeout seconds) and logs whatever
is still unconfirmed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import KafkaException, Producer

from kafka_group_source import read_client_config
from testkit.bench import wanclient

from . import records

MAX_RESTARTS = 20  # new producers after fatal errors, at most
STATISTICS_MS = 10_000  # librdkafka's statistics, each a window of this long


class SoakProducer:
    def __init__(self, args, client, clock=time.time):
        self.args, self.clock = args, clock
        self.config = {
            "bootstrap.servers": args.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            # docs/wan.md's setting: with librdkafka's 5, the requests for a leader's partitions queue in the
            # broker's socket behind each other, a round trip or two each (the soak's 533 ms, docs/faults.md).
            "max.in.flight.requests.per.connection": 1,
            "delivery.timeout.ms": int(args.delivery_timeout * 1000),
            "client.id": f"soak-{args.name}",
            "error_cb": self._client_error,
            "statistics.interval.ms": STATISTICS_MS,
            "stats_cb": self._statistics,
            **client,
        }
        self.log = records.Log(args.out, clock)
        self.in_flight = {}  # (key, seq) -> (partition, sent)
        self.sent = self.acked = self.errors = 0
        self.fatal = None
        self.halt = threading.Event()

    def _client_error(self, err):
        self.log.write("client_error", err=err.name(), reason=err.str(), fatal=err.fatal(), t=self.clock())
        if err.fatal():
            self.fatal = err.str()

    def _statistics(self, raw):
        windows = wanclient.broker_windows(json.loads(raw))
        if windows:
            self.log.write("breakdown", t=self.clock(), brokers={str(b): k for b, k in sorted(windows.items())})

    def _delivered(self, key, seq, partition, sent):
        def callback(err, msg):
            self.in_flight.pop((key, seq), None)
            if err is not None:
                self.errors += 1
                self.log.write("error", k=key, s=seq, p=partition, err=err.name(), fatal=err.fatal(), ts=sent,
                               ta=self.clock())  # fmt: skip
            else:
                self.acked += 1
                offset = msg.offset()
                self.log.write("ack", k=key, s=seq, p=msg.partition(), o=offset if offset is not None else -1,
                               ts=sent, ta=self.clock())  # fmt: skip

        return callback

    def partitions(self, producer, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            meta = producer.list_topics(self.args.topic, timeout=10).topics.get(self.args.topic)
            if meta is not None and meta.error is None and meta.partitions:
                return len(meta.partitions)
            if time.monotonic() > deadline:
                raise SystemExit(f"soak producer: topic {self.args.topic!r} has no partitions after {timeout} s")
            time.sleep(1)

    def run(self):
        args = self.args
        producer = Producer(self.config)
        count = self.partitions(producer)
        self.log.write("start", run=args.run, producer=args.name, topic=args.topic, partitions=count, keys=args.keys,
                       rate=args.rate, t=self.clock())  # fmt: skip
        next_seq = [0] * args.keys
        started = time.monotonic()
        restarts = 0
        while not self.halt.is_set() and time.monotonic() - started < args.duration:
            if self.fatal is not None:
                if restarts >= MAX_RESTARTS:
                    self.log.write("client_error", err="too many restarts", reason=self.fatal, fatal=True,
                                   t=self.clock())  # fmt: skip
                    break
                # A fatal error fails what the old producer still held (its delivery reports say so).
                producer.flush(10)
                self.log.write("restarted", reason=self.fatal, t=self.clock())
                self.fatal, restarts = None, restarts + 1
                producer = Producer(self.config)
            due = int((time.monotonic() - started) * args.rate) + 1
            while self.sent < due:
                key = self.sent % args.keys
                seq, partition = next_seq[key], key % count
                sent = self.clock()
                try:
                    producer.produce(
                        args.topic,
                        key=records.key_bytes(args.run, args.name, key),
                        value=records.encode(args.run, args.name, key, seq, args.size),
                        partition=partition,
                        on_delivery=self._delivered(key, seq, partition, sent),
                    )
                except BufferError:
                    break
                except KafkaException as exc:  # a fatal state: the loop starts a new producer
                    self.fatal = str(exc)
                    break
                self.in_flight[(key, seq)] = (partition, sent)
                next_seq[key] += 1
                self.sent += 1
            producer.poll(0.01)
        producer.flush(args.flush_timeout)
        for (key, seq), (partition, sent) in sorted(self.in_flight.items()):
            self.log.write("unconfirmed", k=key, s=seq, p=partition, ts=sent)
        self.log.write("end", t=self.clock(), sent=self.sent, acked=self.acked, errors=self.errors,
                       unconfirmed=len(self.in_flight))  # fmt: skip
        self.log.close()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.soak.producer", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--topic", required=True)
    p.add_argument("--run", required=True, help="the run's id, in every key and value")
    p.add_argument("--name", required=True, help="this producer's name (its DC), in every key and value")
    p.add_argument("--out", required=True, help="the acknowledgement log")
    p.add_argument("--stop-file", help="stop writing when this file appears")
    p.add_argument("--rate", type=float, default=50, help="records per second")
    p.add_argument("--keys", type=int, default=16)
    p.add_argument("--size", type=int, default=256, help="bytes per record value")
    p.add_argument("--duration", type=float, default=7200, help="seconds, at most")
    p.add_argument("--delivery-timeout", type=float, default=600, help="seconds the client retries a write")
    p.add_argument("--flush-timeout", type=float, default=120, help="seconds to wait for the last writes")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    producer = SoakProducer(args, read_client_config(args.client_config))
    signal.signal(signal.SIGTERM, lambda *_: producer.halt.set())
    if args.stop_file:

        def watch():
            while not producer.halt.wait(0.5):
                if Path(args.stop_file).exists():
                    producer.halt.set()

        threading.Thread(target=watch, daemon=True).start()
    producer.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
