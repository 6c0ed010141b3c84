"""One member of the soak's consumer group, run inside a DC: reads, commits, and logs every commit the group
coordinator accepted.

    python -m testkit.soak.consumer --bootstrap-servers H:P,... --client-config F --topic soak-RUN \\
        --group soak-RUN --rack dc1 --out DIR/consumer-dc1.jsonl [--duration 7200]

A KIP-848 member (group.protocol=consumer) with client.rack, so it reads
from its own DC's replicas. About every second it commits, synchronously,
the offset after the last record it consumed of each partition it owns, and
before it gives a partition up (on_revoke). A partition it loses (on_lost)
or is given again starts from the group's committed offset, never from what
it remembered. The log has a line per event:

    start      group, rack, t
    assigned   parts, t            (also revoked, lost)
    commit     p, o, t             one per partition the coordinator accepted, t after the reply
    commit_error  err, t
    end        consumed, t

SIGTERM or --duration: a last commit, then it leaves the group.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition

from kafka_group_source import read_client_config

from . import records

COMMIT_EVERY_S = 1.0


class Member:
    def __init__(self, args, client, clock=time.time):
        self.args, self.clock = args, clock
        self.log = records.Log(args.out, clock)
        self.halt = threading.Event()
        self.positions = {}  # partition -> the offset after the last record consumed, since it was assigned
        self.consumed = 0
        self.consumer = Consumer(
            {
                "bootstrap.servers": args.bootstrap_servers,
                "group.id": args.group,
                "group.protocol": "consumer",
                "client.rack": args.rack,
                "client.id": f"soak-{args.rack}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                **client,
            }
        )

    def commit(self, partitions=None):
        """Commit the remembered positions (of partitions, default all); log what the coordinator accepted."""
        wanted = {p: o for p, o in self.positions.items() if partitions is None or p in partitions}
        if not wanted:
            return
        offsets = [TopicPartition(self.args.topic, p, o) for p, o in sorted(wanted.items())]
        try:
            answered = self.consumer.commit(offsets=offsets, asynchronous=False)
        except KafkaException as exc:
            self.log.write("commit_error", err=str(exc.args[0].name() if exc.args else exc), t=self.clock())
            return
        now = self.clock()
        for tp in answered or []:
            if tp.error is None:
                self.log.write("commit", p=tp.partition, o=tp.offset, t=now)
            else:
                self.log.write("commit_error", err=tp.error.name(), p=tp.partition, t=now)

    def _assigned(self, _consumer, parts):
        for tp in parts:
            self.positions.pop(tp.partition, None)
        self.log.write("assigned", parts=sorted(tp.partition for tp in parts), t=self.clock())

    def _revoked(self, _consumer, parts):
        gone = {tp.partition for tp in parts}
        self.commit(gone)
        for p in gone:
            self.positions.pop(p, None)
        self.log.write("revoked", parts=sorted(gone), t=self.clock())

    def _lost(self, _consumer, parts):
        for tp in parts:
            self.positions.pop(tp.partition, None)
        self.log.write("lost", parts=sorted(tp.partition for tp in parts), t=self.clock())

    def run(self):
        self.log.write("start", group=self.args.group, rack=self.args.rack, t=self.clock())
        self.consumer.subscribe(
            [self.args.topic], on_assign=self._assigned, on_revoke=self._revoked, on_lost=self._lost
        )
        started = last_commit = time.monotonic()
        try:
            while not self.halt.is_set() and time.monotonic() - started < self.args.duration:
                for msg in self.consumer.consume(500, 0.5):
                    if msg.error() is None:
                        self.positions[msg.partition()] = msg.offset() + 1
                        self.consumed += 1
                if time.monotonic() - last_commit >= COMMIT_EVERY_S:
                    self.commit()
                    last_commit = time.monotonic()
            self.commit()
        finally:
            self.consumer.close()
            self.log.write("end", consumed=self.consumed, t=self.clock())
            self.log.close()


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.soak.consumer", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--topic", required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--rack", required=True, help="the member's DC (client.rack)")
    p.add_argument("--out", required=True, help="the commit log")
    p.add_argument("--duration", type=float, default=7200, help="seconds, at most")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    member = Member(args, read_client_config(args.client_config))
    signal.signal(signal.SIGTERM, lambda *_: member.halt.set())
    member.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
