"""Kernel byte counters (nftables) of the traffic each broker sends to this host.

A second measurement of where a read's bytes came from, independent of the
brokers' own metrics: one counter per broker address on the input path, for
packets from the broker's client port. Needs root and nft; opt in with
--network-counters.
"""

from __future__ import annotations

import json
import socket
import subprocess

TABLE = "kafka_smoke"


class NetworkCounters:
    def __init__(self, brokers, port):
        """brokers: {broker id: advertised host}; port: the client listener's port."""
        self.addresses = {b: socket.gethostbyname(host) for b, host in brokers.items()}
        self.port = int(port)

    def _nft(self, *args, stdin=None):
        proc = subprocess.run(["nft", *args], input=stdin, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"nft {' '.join(args)}: {proc.stderr.strip()}")
        return proc.stdout

    def __enter__(self):
        rules = "\n".join(
            f'    ip saddr {ip} tcp sport {self.port} counter comment "{b}"' for b, ip in sorted(self.addresses.items())
        )
        self._nft(
            "-f",
            "-",
            stdin=(
                f"table inet {TABLE}\ndelete table inet {TABLE}\n"
                f"table inet {TABLE} {{\n  chain input {{\n    type filter hook input priority -150; policy accept;\n"
                f"{rules}\n  }}\n}}\n"
            ),
        )
        return self

    def read(self):
        """{broker id: bytes received from it so far}."""
        out = {}
        for item in json.loads(self._nft("-j", "list", "table", "inet", TABLE))["nftables"]:
            rule = item.get("rule")
            if not rule:
                continue
            counter = next(e["counter"] for e in rule["expr"] if "counter" in e)
            out[int(rule["comment"])] = float(counter["bytes"])
        return out

    def __exit__(self, *exc):
        self._nft("delete", "table", "inet", TABLE)
