"""One member of a consumer group (KIP-848, group.protocol=consumer) for the active/active group drill.

    python -m testkit.loadtest.member --bootstrap-servers H:P,... --topic load --group loadtest-aa-RUN \\
        --rack dc1 --out DIR/dc1-a --client-config FILE

Reads the harness's records as client.rack --rack, writes each one it
consumed to OUT.records ("partition offset run seq monotonic" lines) and
commits its offsets only after those lines are on disk: at-least-once, so a
member that dies loses nothing, and the member that takes over its
partitions may read some records again (counted as duplicates). Logs every
assignment change to OUT.events, and keeps in OUT.json, from librdkafka's
statistics every second, the bytes it received from each broker and the
record bytes it fetched from each (per partition, from the broker it was
fetching that partition from). SIGTERM commits
and leaves the group; a SIGKILL leaves it like a crashed process would.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time

from confluent_kafka import Consumer

from kafka_group_source import read_client_config

from . import harness, verify

COMMIT_EVERY_SECONDS = 0.5


class Member:
    def __init__(self, args, client):
        self.out = args.out
        self.rx_bytes, self.fetched = {}, harness.FetchedBytes(args.topic)
        self.stop = threading.Event()
        self.records = open(f"{self.out}.records", "a")  # noqa: SIM115 - closed in run()
        self.events = open(f"{self.out}.events", "a")  # noqa: SIM115 - closed in run()
        self.topic = args.topic
        self.consumer = Consumer(
            {
                "bootstrap.servers": args.bootstrap_servers,
                "group.id": args.group,
                "group.protocol": "consumer",
                "client.rack": args.rack,
                "client.id": os.path.basename(self.out),
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "statistics.interval.ms": 1000,
                "stats_cb": self._stats,
                **client,
            }
        )

    def _stats(self, raw):
        stats = json.loads(raw)
        for broker in stats["brokers"].values():
            if broker.get("nodeid", -1) >= 0:
                self.rx_bytes[broker["nodeid"]] = broker["rxbytes"]
        self.fetched.update(stats)
        self._summary()

    def _summary(self):
        """OUT.json, rewritten whole at every statistics report: a killed member leaves its last one."""
        with open(f"{self.out}.json.tmp", "w") as f:
            json.dump(
                {
                    "rx_bytes": {str(b): n for b, n in sorted(self.rx_bytes.items())},
                    "fetched_bytes": {str(b): n for b, n in sorted(self.fetched.by_broker().items())},
                },
                f,
            )
        os.replace(f"{self.out}.json.tmp", f"{self.out}.json")

    def _event(self, kind, partitions):
        line = {"t": time.monotonic(), "event": kind, "partitions": sorted(p.partition for p in partitions)}
        self.events.write(json.dumps(line) + "\n")
        self.events.flush()

    def run(self):
        self.consumer.subscribe(
            [self.topic],
            on_assign=lambda _c, parts: self._event("assigned", parts),
            on_revoke=lambda _c, parts: self._event("revoked", parts),
            on_lost=lambda _c, parts: self._event("lost", parts),
        )
        last_commit, pending = time.monotonic(), False
        try:
            while not self.stop.is_set():
                for msg in self.consumer.consume(500, 0.5):
                    if msg.error():
                        continue
                    decoded = verify.decode(msg.value())
                    if decoded:
                        run_id, _, seq = decoded
                        self.records.write(f"{msg.partition()} {msg.offset()} {run_id} {seq} {time.monotonic()}\n")
                        pending = True
                if pending and time.monotonic() - last_commit >= COMMIT_EVERY_SECONDS:
                    self.records.flush()
                    os.fsync(self.records.fileno())
                    try:
                        self.consumer.commit(asynchronous=False)
                    except Exception as exc:  # noqa: BLE001 - a failed commit is retried; records are re-read at worst
                        self._event(f"commit failed: {exc}", [])
                    last_commit, pending = time.monotonic(), False
            self.records.flush()
            if pending:
                self.consumer.commit(asynchronous=False)
            self.consumer.poll(1.2)  # one more statistics report
        finally:
            self.consumer.close()
            self.records.close()
            self.events.close()
        self._summary()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.loadtest.member", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", default="load")
    p.add_argument("--group", required=True)
    p.add_argument("--rack", required=True, help="the member's DC (client.rack)")
    p.add_argument("--out", required=True, help="path prefix of the member's files")
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--duration", type=float, default=3600, help="seconds, at most")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    member = Member(args, read_client_config(args.client_config))
    signal.signal(signal.SIGTERM, lambda *_: member.stop.set())
    timer = threading.Timer(args.duration, member.stop.set)
    timer.daemon = True
    timer.start()
    member.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
