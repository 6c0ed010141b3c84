"""Kernel byte counters (nftables): a second measurement of where a read's bytes came from.

Two ways, both independent of the brokers' own metrics, both needing root
and nft on the runner:

NetworkCounters (--network-counters), for a job that runs on the runner
(local[N]): the Spark reads run in a network namespace of their own, joined
to this host by a veth pair; every byte a broker sends them is forwarded by
this host into that pair, where one counter per broker counts it. Other
clients on this host use the host's own network and are not counted.

RoutedBytes (--dc-network), for jobs that run on each DC's Spark cluster,
when the runner is the router between the DCs' networks (the testbed's
host): one counter per ordered pair of DCs counts the bytes the Kafka
listener's port sends from one DC's network to the hosts that read for the
other (its Spark workers, and the driver's address there), so a read's
bytes that crossed DCs are counted where they cross, bytes that stayed in a
DC are not (they never reach the router), and neither are the bytes of any
other client of the DCs (a producer in one DC writing to the other's
leaders, a consumer reading across). Without the reading hosts it counts
whole networks (the traffic measurements, which count every client).
"""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import subprocess
from pathlib import Path

TABLE = "kafka_smoke"
ROUTED_TABLE = "kafka_smoke_routed"
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
    proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, check=False)
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


def counter_name(src, dst):
    return f"{src}_to_{dst}"


def routed_ruleset(table, subnets, ports, directions=("sport",), readers=None):
    """An nft table with one named counter per ordered pair of DCs ({dc: subnet}), fed by the TCP traffic from
    the first DC's subnet to the second's whose source (sport: the listeners' replies) or destination (dport:
    requests) port is one of ports.

    readers ({dc: [addresses]}): count only what goes to the hosts that read for the second DC (a DC that
    reads), in the forward path (its Spark workers) and in the input path (a driver on the runner itself, at
    its address on the DC's network). Without readers: everything that goes to the second DC's subnet, in the
    forward path.
    """
    port_set = ", ".join(str(p) for p in sorted(ports))
    pairs = routed_pairs(subnets, readers)

    def to(dc):
        return f"{{ {', '.join(sorted(readers[dc]))} }}" if readers is not None else subnets[dc]

    lines = [f"table inet {table} {{"]
    lines += [f"    counter {counter_name(a, b)} {{ }}" for a, b in pairs]
    for hook in ("forward", "input") if readers is not None else ("forward",):
        lines += [f"    chain {hook} {{", f"        type filter hook {hook} priority -20; policy accept;"]
        for (a, b), direction in itertools.product(pairs, directions):
            lines.append(
                f"        ip saddr {subnets[a]} ip daddr {to(b)} meta l4proto tcp th {direction} {{ {port_set} }} "
                f"counter name {counter_name(a, b)}"
            )
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def named_counters(listing):
    """{name: (bytes, packets)} of the named counters in `nft -j list counters ...`."""
    found = {}
    for item in json.loads(listing).get("nftables", []):
        counter = item.get("counter")
        if counter:
            found[counter["name"]] = (counter["bytes"], counter["packets"])
    return found


def routed_pairs(subnets, readers=None):
    """The ordered DC pairs (from, to) a routed ruleset counts: every pair, or, with readers, those into a DC that
    reads (refused when a reading DC has no host, or no network)."""
    if readers is None:
        return list(itertools.permutations(sorted(subnets), 2))
    for dc in sorted(readers):
        if dc not in subnets:
            raise ValueError(f"DC {dc!r} reads but has no network to count what crosses into it")
        if not readers[dc]:
            raise ValueError(f"DC {dc!r} has no reading host to count the bytes that cross into it")
    return [(a, b) for a, b in itertools.permutations(sorted(subnets), 2) if b in readers]


def parse_routed(listing, table, pairs):
    """{(from DC, to DC): (bytes, packets)} of `nft -j list counters table inet <table>`; every pair must be there."""
    found = named_counters(listing)
    out = {}
    for a, b in pairs:
        if counter_name(a, b) not in found:
            raise RuntimeError(f"nft counter {counter_name(a, b)} not found in table {table}")
        out[(a, b)] = found[counter_name(a, b)]
    return out


def received_counter(dc):
    return f"from_{dc}"


def received_ruleset(table, subnets, ports):
    """An nft table for one host's own network namespace: one named counter per DC ({dc: subnet}), fed in the
    input path by the TCP segments from that DC's subnet whose source port is one of ports (the listeners'
    replies). The bytes from the host's own DC and from the other DCs are counted alike, at the same hook."""
    port_set = ", ".join(str(p) for p in sorted(ports))
    lines = [f"table inet {table} {{"]
    lines += [f"    counter {received_counter(dc)} {{ }}" for dc in sorted(subnets)]
    lines += ["    chain input {", "        type filter hook input priority -150; policy accept;"]
    lines += [
        f"        ip saddr {subnets[dc]} meta l4proto tcp th sport {{ {port_set} }} counter name {received_counter(dc)}"
        for dc in sorted(subnets)
    ]
    lines += ["    }", "}"]
    return "\n".join(lines) + "\n"


def parse_received(listing, table, dcs):
    """{DC: (bytes, packets)} of `nft -j list counters table inet <table>`; every DC's counter must be there."""
    found = named_counters(listing)
    missing = [received_counter(dc) for dc in sorted(dcs) if received_counter(dc) not in found]
    if missing:
        raise RuntimeError(f"nft counter(s) {', '.join(missing)} not found in table {table}")
    return {dc: found[received_counter(dc)] for dc in sorted(dcs)}


class RoutedBytes:
    """The router's per-DC-pair counters of the listeners' ports, from the moment the block is entered."""

    def __init__(self, subnets, ports, table=ROUTED_TABLE, directions=("sport",), readers=None):
        """subnets: {dc: its network (CIDR)}; ports: the Kafka ports to count; readers: {dc: [addresses]} of the
        hosts whose bytes alone count (see routed_ruleset)."""
        self.subnets, self.ports, self.table, self.directions = dict(subnets), set(ports), table, directions
        self.readers = readers

    def __enter__(self):
        ruleset = routed_ruleset(self.table, self.subnets, self.ports, self.directions, self.readers)
        _run("nft", "delete", "table", "inet", self.table, check=False)
        _run("nft", "-f", "-", stdin=ruleset)
        return self

    def read(self):
        listing = _run("nft", "-j", "list", "counters", "table", "inet", self.table)
        return parse_routed(listing, self.table, routed_pairs(self.subnets, self.readers))

    def __exit__(self, *exc):
        _run("nft", "delete", "table", "inet", self.table, check=False)
