"""The stretch cluster's own Prometheus exporter: reads the cluster every interval, serves the last read on /metrics.

    stretch-exporter --config stretch-exporter.json [--listen 127.0.0.1:9308]

main() is the entry point (the console script stretch-exporter, and python -m stretch_exporter).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .cluster import Cluster
from .samples import exposition, group_samples, replica_samples
from .settings import SettingsError, load_settings

PARTS = ("groups", "partitions")


class Exporter:
    """Reads the cluster every interval and keeps the samples of each part's last read."""

    def __init__(self, settings, cluster, clock=time.time, monotonic=time.monotonic):
        self.settings, self.cluster, self.clock, self.monotonic = settings, cluster, clock, monotonic
        self.parts = {part: {"samples": [], "ok": False, "at": 0.0, "took": 0.0} for part in PARTS}
        self.lock = threading.Lock()
        self.errors = {}

    def _read(self, part):
        brokers = self.cluster.broker_dcs()
        broker_dcs = sorted(set(brokers.values()))
        if part == "groups":
            groups = self.cluster.groups()
            ends = self.cluster.end_offsets({tp for g in groups.values() for tp in g["committed"]})
            samples = []
            for name, group in sorted(groups.items()):
                samples += group_samples(name, group["members"], group["committed"], ends,
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
                self.errors[part] = str(exc)
                print(f"stretch_exporter: reading the {part} failed: {exc}", file=sys.stderr, flush=True)
            with self.lock:
                self.parts[part] = {"samples": samples, "ok": ok, "at": self.clock(),
                                    "took": self.monotonic() - started}  # fmt: skip

    def metrics(self):
        with self.lock:
            parts = dict(self.parts)
        samples = [s for part in PARTS for s in parts[part]["samples"]]
        for part in PARTS:
            samples.append(("stretch_exporter_read_success", {"part": part}, 1 if parts[part]["ok"] else 0))
            samples.append(("stretch_exporter_last_read_timestamp_seconds", {"part": part}, parts[part]["at"]))
            samples.append(("stretch_exporter_read_duration_seconds", {"part": part}, parts[part]["took"]))
        return exposition(samples)

    def run(self, stop):
        while not stop.is_set():
            started = self.monotonic()
            self.read_once()
            stop.wait(max(0.0, self.settings["interval_seconds"] - (self.monotonic() - started)))


def serve(exporter, listen):
    host, port = listen.rsplit(":", 1)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802  http.server's name
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404)
                return
            body = exporter.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

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
