"""Runs a bounded load: sequenced acks=all writes and a reader per DC, then verifies what they saw.

    python -m testkit.loadtest --bootstrap-servers h1:9092,h2:9092 --topic load --dc dc1 --dc dc2 \\
        --rate 200 --duration 900 --report reports/load.json [--stop-file PATH]

Runs until --duration seconds or --max-records have passed, or the stop file
appears, or it gets SIGTERM. Then every reader reads up to the end offsets, and
the report says how many acknowledged records each DC's reader did not find
(must be 0), how many came out of order, the produce errors the application
saw, the writes neither acknowledged nor failed, the produce latency and the
longest stall. Exits 0 only when nothing acknowledged was lost or reordered
and every write was acknowledged.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
import uuid
from pathlib import Path

from kafka_group_source import read_client_config

from . import harness, verify


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.loadtest", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--topic", default="load")
    p.add_argument("--dc", action="append", required=True, help="a DC to read as (client.rack); repeat")
    p.add_argument("--rate", type=float, default=200, help="records per second")
    p.add_argument("--duration", type=float, default=600, help="seconds, at most")
    p.add_argument("--max-records", type=int, default=500_000)
    p.add_argument("--size", type=int, default=512, help="bytes per record")
    p.add_argument("--drain-timeout", type=float, default=300)
    p.add_argument("--report", default="reports/load.json")
    p.add_argument("--stop-file", help="stop producing when this file appears")
    p.add_argument("--ready-file", help="written once the first record is acknowledged")
    p.add_argument(
        "--marks-file",
        help="append a line NAME (now) or NAME@SECONDS (CLOCK_MONOTONIC) to mark a moment (a DC lost, healed, ...);"
        " the report breaks the run down by mark",
    )
    p.add_argument("--client-config", metavar="FILE", help="client settings (security) as key=value lines")
    p.add_argument("--acks-file", help="write the acknowledged records here, one 'partition seq' line each")
    return p.parse_args(argv)


def parse_mark(line):
    name, _, at = line.strip().partition("@")
    return name, float(at) if at else time.monotonic()


def run(args):
    client = read_client_config(args.client_config)
    config = {"bootstrap.servers": args.bootstrap_servers, **client}
    partitions = sorted(harness.partition_leaders(config, args.topic))
    start_offsets = harness.end_offsets(config, args.topic, partitions)
    run_id = uuid.uuid4().hex[:12]
    readers = [harness.DcReader(config, args.topic, start_offsets, dc, run_id) for dc in args.dc]
    producer = harness.LoadProducer(
        config, args.topic, partitions, run_id, args.rate, args.duration, args.max_records, args.size
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    for reader in readers:
        reader.start()
    producer.start()
    ready_written = False
    marks, marked_lines = [], 0
    while producer.is_alive():
        if args.marks_file and Path(args.marks_file).exists():
            lines = Path(args.marks_file).read_text().splitlines()
            marks += [parse_mark(line) for line in lines[marked_lines:] if line.strip()]
            marked_lines = len(lines)
        if stop.is_set() or (args.stop_file and Path(args.stop_file).exists()):
            producer.stop()
        if args.ready_file and not ready_written and producer.acks:
            Path(args.ready_file).write_text(run_id + "\n")
            ready_written = True
        time.sleep(0.2)
    producer.join()
    ends = harness.end_offsets(config, args.topic, partitions)
    for reader in readers:
        reader.finish(ends, args.drain_timeout)
    for reader in readers:
        reader.join()
    report = verify.judge(
        producer.acks,
        producer.errors,
        {r.dc: r.records for r in readers},
        producer.started,
        producer.finished,
        sent=producer.sent,
    )
    racks = harness.broker_racks(config)
    for reader in readers:
        report["dcs"][reader.dc].update(verify.locality(reader.fetched.counts, racks, reader.dc))
    if marks:
        report["windows"] = verify.windows(
            sorted(marks, key=lambda m: m[1]),
            producer.acks,
            {r.dc: r.records for r in readers},
            {r.dc: r.fetched_timeline for r in readers},
            racks,
            producer.finished,
        )
    report.update(run_id=run_id, topic=args.topic, partitions=len(partitions), rate=args.rate)
    if args.acks_file:
        Path(args.acks_file).write_text("".join(f"{a[0]} {a[2]}\n" for a in producer.acks))
    return report


def main(argv=None):
    args = parse_args(argv)
    report = run(args)
    path = Path(args.report)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"loadtest: {report['acknowledged']} acknowledged, lost {report['lost']}, reordered {report['reordered']}, "
        f"duplicates {report['duplicates']}, unconfirmed {report['unconfirmed']}, "
        f"produce errors {report['produce_errors']}, latency p99 {report['latency_p99_ms']} ms "
        f"max {report['latency_max_ms']} ms after a {report['warmup_seconds']:g} s warm-up (warm-up p99 "
        f"{report['warmup_latency_p99_ms']} ms), longest stall {report['longest_stall_seconds']} s; report {path}"
    )
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
