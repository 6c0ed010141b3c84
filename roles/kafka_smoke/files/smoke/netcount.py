"""Kernel byte counters (nftables) of the bytes each broker sends to the smoke job, and to nothing else.

A second measurement of where a read's bytes came from, independent of the
brokers' own metrics. The Spark reads run in a network namespace of their
own, joined to this host by a veth pair; every byte a broker sends them is
forwarded by this host into that pair, where one counter per broker counts
it. Other clients on this host (a load generator, another job) use the
host's own network and are not counted. Needs root, iproute2 and nft; opt in
with --network-counters.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

TABLE = "kafka_smoke"
NETNS = "kafka-smoke"
HOST_IF, JOB_IF = "ksmoke0", "ksmoke1"
# A point-to-point link between this host and the job's namespace.
HOST_ADDR, JOB_ADDR, PREFIX = "10.254.254.1", "10.254.254.2", 30
# `ip netns exec` mounts these over /etc/hosts and /etc/resolv.conf in the
# namespace. The host's name server is not reachable from it, and Kafka's Java
# client looks up the name of every address it connects to with SASL: each
# lookup would wait 10 s for that server, longer than the client waits for a
# connection. In the namespace, the brokers' names come from its own hosts
# file, and any other lookup is refused at once by the loopback.
NETNS_ETC = Path("/etc/netns") / NETNS


def _run(*cmd, stdin=None, check=True):
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip()}")
    return proc.stdout


class NetworkCounters:
    def __init__(self, brokers, port):
        """brokers: {broker id: advertised host}; port: the client listener's port."""
        self.hosts = dict(brokers)
        self.addresses = {b: socket.gethostbyname(host) for b, host in brokers.items()}
        self.port = int(port)

    def etc_files(self):
        """{name: text} of the namespace's /etc/hosts and /etc/resolv.conf."""
        # Spark looks up this machine's own name: in the namespace, the loopback.
        names = {"127.0.0.1": {"localhost", socket.gethostname()}}
        for b, ip in sorted(self.addresses.items()):
            if self.hosts[b] != ip:
                names.setdefault(ip, set()).add(self.hosts[b])
        hosts = [f"{ip} {' '.join(sorted(n))}" for ip, n in sorted(names.items())]
        return {"hosts": "\n".join(hosts) + "\n", "resolv.conf": "nameserver 127.0.0.1\n"}

    def wrap(self, cmd):
        """The command, run inside the job's network namespace."""
        return ["ip", "netns", "exec", NETNS, *cmd]

    # Spark's driver binds to its host's address, which the namespace does not have.
    spark_conf = ("spark.driver.bindAddress=127.0.0.1", "spark.driver.host=127.0.0.1")

    def _remove(self):
        _run("nft", "delete", "table", "inet", TABLE, check=False)
        _run("ip", "netns", "delete", NETNS, check=False)
        _run("ip", "link", "delete", HOST_IF, check=False)
        shutil.rmtree(NETNS_ETC, ignore_errors=True)

    def __enter__(self):
        self._remove()
        try:
            NETNS_ETC.mkdir(parents=True, exist_ok=True)
            for name, text in self.etc_files().items():
                (NETNS_ETC / name).write_text(text)
            _run("ip", "netns", "add", NETNS)
            _run("ip", "link", "add", HOST_IF, "type", "veth", "peer", "name", JOB_IF)
            _run("ip", "link", "set", JOB_IF, "netns", NETNS)
            _run("ip", "addr", "add", f"{HOST_ADDR}/{PREFIX}", "dev", HOST_IF)
            _run("ip", "link", "set", HOST_IF, "up")
            for cmd in (
                ("ip", "addr", "add", f"{JOB_ADDR}/{PREFIX}", "dev", JOB_IF),
                ("ip", "link", "set", JOB_IF, "up"),
                ("ip", "link", "set", "lo", "up"),
                ("ip", "route", "add", "default", "via", HOST_ADDR),
            ):
                _run(*self.wrap(cmd))
            rules = "\n".join(
                f'    oifname "{HOST_IF}" ip saddr {ip} tcp sport {self.port} counter comment "{b}"'
                for b, ip in sorted(self.addresses.items())
            )
            _run(
                "nft",
                "-f",
                "-",
                stdin=(
                    f"table inet {TABLE} {{\n  chain forward {{\n"
                    f"    type filter hook forward priority -150; policy accept;\n{rules}\n  }}\n}}\n"
                ),
            )
        except Exception:
            self._remove()
            raise
        return self

    def read(self):
        """{broker id: bytes it has sent into the job's namespace so far}."""
        out = {}
        for item in json.loads(_run("nft", "-j", "list", "table", "inet", TABLE))["nftables"]:
            rule = item.get("rule")
            if not rule:
                continue
            counter = next(e["counter"] for e in rule["expr"] if "counter" in e)
            out[int(rule["comment"])] = float(counter["bytes"])
        return out

    def __exit__(self, *exc):
        self._remove()
