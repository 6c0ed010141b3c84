"""Clients placed in a testbed DC, and the bytes the host routed between the DCs' networks.

Each DC of the testbed is a podman network (a bridge on this host), and the
host routes everything that goes from one DC to another. A client joins a DC
through a network namespace of its own, wired to the DC's bridge by a veth
pair, at the subnet's .250 address: its traffic to another DC is routed by
the host like a broker's. One nftables table counts, per ordered pair of DC
subnets, the bytes and packets of the Kafka listeners' connections (both
directions: requests and their responses) in the host's forward path.
Needs root, iproute2, nft and the testbed (make up converge).
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
from pathlib import Path

from kafka_smoke import netcount
from testkit import traffic
from testkit.periodic import Periodic

TABLE = "stretch_traffic"
CLIENT_HOST = 250  # the namespace's address in its DC's subnet


def _run(*cmd, check=True):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def dc_network(dc):
    """(bridge, subnet, gateway) of the testbed network of dc."""
    out = _run(
        "podman", "network", "inspect", f"stretch-{dc}",
        "--format", "{{.NetworkInterface}} {{range .Subnets}}{{.Subnet}} {{.Gateway}}{{end}}",
    )  # fmt: skip
    bridge, subnet, gateway = out.split()
    return bridge, ipaddress.ip_network(subnet), gateway


class RoutedBytes(netcount.RoutedBytes):
    """The host's per-DC-pair counters of the Kafka ports (requests and replies), from the moment the block is
    entered."""

    def __init__(self, dcs, ports):
        self.dcs = sorted(dcs)
        super().__init__({dc: dc_network(dc)[1] for dc in self.dcs}, ports, table=TABLE, directions=("dport", "sport"))


def container_pid(address):
    """The process id of the running testbed container that has address on one of its networks."""
    for name in _run("podman", "ps", "--format", "{{.Names}}").split():
        out = _run(
            "podman", "inspect", name,
            "--format", "{{.State.Pid}} {{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
        )  # fmt: skip
        pid, *addresses = out.split()
        if address in addresses:
            return int(pid)
    raise RuntimeError(f"no running container has the address {address}")


class ReceivedBytes:
    """What one testbed host receives from each DC's Kafka listeners, counted in the host's own network namespace
    (entered with nsenter): its own DC's replies and the other DCs' alike, at the same hook and in the same unit
    (IP bytes). address: the container's; None for this machine itself (the runner, where the load harness
    runs). `read()` gives {DC: (bytes, packets)} since the block was entered."""

    def __init__(self, address, subnets, ports, table="stretch_received"):
        self.address, self.subnets, self.ports, self.table = address, dict(subnets), set(ports), table
        self.pid = None

    def _nft(self, *args, stdin=None, check=True):
        enter = ["nsenter", "--target", str(self.pid), "--net"] if self.pid else []
        proc = subprocess.run([*enter, "nft", *args], input=stdin, capture_output=True, text=True)
        if check and proc.returncode != 0:
            where = f"{self.address}'s network namespace" if self.address else "this machine's network namespace"
            raise RuntimeError(f"nft {' '.join(args)} in {where}: {proc.stderr.strip()}")
        return proc.stdout

    def __enter__(self):
        self.pid = container_pid(self.address) if self.address else None
        self._nft("delete", "table", "inet", self.table, check=False)
        self._nft("-f", "-", stdin=netcount.received_ruleset(self.table, self.subnets, self.ports))
        return self

    def read(self):
        listing = self._nft("-j", "list", "counters", "table", "inet", self.table)
        return netcount.parse_received(listing, self.table, self.subnets)

    def __exit__(self, *exc):
        self._nft("delete", "table", "inet", self.table, check=False)


class Sampler(Periodic):
    """Reads RoutedBytes every interval seconds, from start() until stop(): [(seconds since the epoch, {pair: bytes})].

    Wall-clock time, so that the samples line up with the times a playbook's log gives its tasks.
    """

    what = "reading the routed bytes"

    def __init__(self, routed, interval=1.0):
        super().__init__(interval)
        self.routed, self.samples = routed, []

    def sample(self):
        counts = self.routed.read()
        self.samples.append((time.time(), {pair: b for pair, (b, _) in counts.items()}))

    def stop(self):
        super().stop()
        return self.samples

    def series(self, pair, until=None):
        """[(seconds since the first sample, bytes counted since it)] of one DC pair, up to the time until."""
        t0, first = self.samples[0]
        return [(t - t0, counts[pair] - first[pair]) for t, counts in self.samples if until is None or t <= until]


def between(before, after):
    """{pair: (bytes, packets)} counted from one read to the next."""
    return {pair: (after[pair][0] - before[pair][0], after[pair][1] - before[pair][1]) for pair in after}


class Retransmits:
    """The TCP segments each DC's Kafka senders sent again: its brokers (their containers' network namespaces) and
    the clients placed in it (DcClient namespaces). `read()` gives {DC: segments} since the block was entered;
    `payload` is the most stream bytes one of them carries (segment_payload of the senders' DCs, read once).

    A namespace's count covers all its connections, across DCs or not: as an allowance for the wire's
    retransmitted bytes it is an upper bound."""

    def __init__(self, brokers, clients=()):
        self.brokers, self.clients = list(brokers), list(clients)  # [(dc, address)], [DcClient]
        self.pids, self.start, self.payload = [], {}, 0

    def _counts(self):
        out = {}
        for dc, pid in self.pids:
            segments = traffic.retransmitted_segments(Path(f"/proc/{pid}/net/snmp").read_text())
            out[dc] = out.get(dc, 0) + segments
        for client in self.clients:
            segments = traffic.retransmitted_segments(_run(*client.wrap(["cat", "/proc/net/snmp"])))
            out[client.dc] = out.get(client.dc, 0) + segments
        return out

    def __enter__(self):
        self.pids = [(dc, container_pid(address)) for dc, address in self.brokers]
        self.payload = segment_payload(sorted({dc for dc, _ in self.brokers} | {c.dc for c in self.clients}))
        self.start = self._counts()
        return self

    def read(self):
        now = self._counts()
        return {dc: now[dc] - self.start.get(dc, 0) for dc in now}

    def __exit__(self, *exc):
        return None


def segment_payload(dcs):
    """The most stream bytes one TCP segment carries between the DCs: the largest of their bridges' MTU, less the
    IP and TCP headers (with timestamps) that traffic.HEADER_BYTES takes off each packet."""
    mtu = max(int((Path("/sys/class/net") / dc_network(dc)[0] / "mtu").read_text()) for dc in dcs)
    return mtu - traffic.HEADER_BYTES


class DcClient:
    """A network namespace joined to dc's bridge: `wrap(cmd)` runs cmd there, as a client of that DC."""

    def __init__(self, dc):
        self.dc = dc
        self.netns = f"stretch-{dc}-client"
        self.host_if, self.ns_if = f"st{dc}c0", f"st{dc}c1"
        self.bridge, subnet, self.gateway = dc_network(dc)
        self.address = f"{subnet.network_address + CLIENT_HOST}/{subnet.prefixlen}"

    def wrap(self, cmd):
        return ["ip", "netns", "exec", self.netns, *cmd]

    def sent(self):
        """(bytes, packets) this client has sent, as the kernel counts them on the host's end of its link (what
        arrives there from the namespace), Ethernet headers included."""
        stats = Path("/sys/class/net") / self.host_if / "statistics"
        return int((stats / "rx_bytes").read_text()), int((stats / "rx_packets").read_text())

    def _remove(self):
        _run("ip", "netns", "delete", self.netns, check=False)
        _run("ip", "link", "delete", self.host_if, check=False)

    def __enter__(self):
        self._remove()
        try:
            _run("ip", "netns", "add", self.netns)
            _run("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
            _run("ip", "link", "set", self.ns_if, "netns", self.netns)
            _run("ip", "link", "set", self.host_if, "master", self.bridge, "up")
            inside = ("ip", "netns", "exec", self.netns, "ip")
            _run(*inside, "addr", "add", self.address, "dev", self.ns_if)
            _run(*inside, "link", "set", self.ns_if, "up")
            _run(*inside, "link", "set", "lo", "up")
            _run(*inside, "route", "add", "default", "via", self.gateway)
        except BaseException:
            self._remove()
            raise
        return self

    def __exit__(self, *exc):
        self._remove()
