"""The stretch cluster's own Prometheus exporter: reads the cluster every interval, serves the last read on /metrics.

    stretch-exporter --config stretch-exporter.json [--listen 127.0.0.1:9308]

main() is the entry point (the console script stretch-exporter, and python -m stretch_exporter).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from urllib.parse import urlsplit

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.exposition import MetricsHandler

from .cluster import Cluster
from .samples import families, group_samples, replica_samples, uncommitted_owned
from .settings import SettingsError, load_settings

PARTS = ("groups", "partitions")


class Exporter:
    """Reads the cluster every interval and keeps the samples of each part's last read; serves them through
    prometheus_client (its registry holds the exporter as a collector, asked at each scrape).

    A part whose last read ended more than stale_seconds ago is stale: its
    reader hangs (a call that never returns), and its figures, however good
    they were, are left out and its read_success is 0."""

    def __init__(self, settings, cluster, clock=time.time, monotonic=time.monotonic):
        self.settings, self.cluster, self.clock, self.monotonic = settings, cluster, clock, monotonic
        started = monotonic()
        self.parts = {part: {"samples": [], "ok": False, "at": 0.0, "took": 0.0, "ended": started} for part in PARTS}
        self.lock = threading.Lock()
        self.errors = {}
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)

    def _read(self, part):
        brokers = self.cluster.broker_dcs()
        broker_dcs = sorted(set(brokers.values()))
        if part == "groups":
            groups = self.cluster.groups()
            uncommitted = {name: uncommitted_owned(g["members"], g["committed"]) for name, g in groups.items()}
            owned = {tp for g in groups.values() for _host, assigned in g["members"] for tp in assigned}
            ends = self.cluster.end_offsets({tp for g in groups.values() for tp in g["committed"]} | owned)
            wanted = set().union(*uncommitted.values())
            starts = self.cluster.start_offsets(wanted) if wanted else {}
            samples = []
            for name, group in sorted(groups.items()):
                samples += group_samples(name, group["members"], group["committed"], ends, starts,
                                         self.settings["dc_networks"], broker_dcs)  # fmt: skip
            return samples
        partitions, min_isr = self.cluster.partitions()
        return replica_samples(partitions, min_isr, brokers, broker_dcs)

    def read_once(self):
        for part in PARTS:
            started = self.monotonic()
            try:
                samples, ok = self._read(part), True
                self.errors.pop(part, None)
            except Exception as exc:  # noqa: BLE001  a failed read is served as such, and logged
                samples, ok = [], False
                # A future's timeout says nothing of itself (str() is empty): its type names it.
                self.errors[part] = str(exc) or type(exc).__name__
                print(f"stretch_exporter: reading the {part} failed: {self.errors[part]}", file=sys.stderr, flush=True)
            ended = self.monotonic()
            with self.lock:
                self.parts[part] = {"samples": samples, "ok": ok, "at": self.clock(), "took": ended - started,
                                    "ended": ended}  # fmt: skip

    def samples(self):
        """What a scrape serves now: each part's last read unless it failed or is stale, and how each read went."""
        with self.lock:
            parts = dict(self.parts)
        now = self.monotonic()
        samples, status = [], []
        for part in PARTS:
            stale = now - parts[part]["ended"] > self.settings["stale_seconds"]
            ok = parts[part]["ok"] and not stale
            if ok:
                samples += parts[part]["samples"]
            status += [
                ("stretch_exporter_read_success", {"part": part}, 1 if ok else 0),
                ("stretch_exporter_stale", {"part": part}, 1 if stale else 0),
                ("stretch_exporter_last_read_timestamp_seconds", {"part": part}, parts[part]["at"]),
                ("stretch_exporter_read_duration_seconds", {"part": part}, parts[part]["took"]),
            ]
        return samples + status

    def collect(self):
        """prometheus_client's collector interface: the metric families of a scrape."""
        return families(self.samples())

    def metrics(self):
        """The text a scrape gets (Prometheus's text format)."""
        return generate_latest(self.registry).decode()

    def run(self, stop):
        while not stop.is_set():
            started = self.monotonic()
            self.read_once()
            stop.wait(max(0.0, self.settings["interval_seconds"] - (self.monotonic() - started)))


def serve(exporter, listen):
    """An HTTP server (not yet serving) of the exporter's metrics on /metrics at host:port, through
    prometheus_client's handler; any other path is 404."""
    host, port = listen.rsplit(":", 1)

    class Handler(MetricsHandler.factory(exporter.registry)):
        def do_GET(self):  # noqa: N802  http.server's name
            if urlsplit(self.path).path != "/metrics":
                self.send_error(404)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    return ThreadingHTTPServer((host.strip("[]"), int(port)), Handler)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="the settings file (JSON)")
    p.add_argument("--listen", default="127.0.0.1:9308", help="host:port to serve /metrics on")
    args = p.parse_args(argv)
    try:
        with open(args.config) as f:
            settings = load_settings(f.read())
    except (OSError, SettingsError) as exc:
        print(f"stretch_exporter: {args.config}: {exc}", file=sys.stderr)
        return 2
    exporter = Exporter(settings, Cluster(settings))
    stop = threading.Event()
    reader = threading.Thread(target=exporter.run, args=(stop,), daemon=True)
    reader.start()
    server = serve(exporter, args.listen)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
