"""The delayer: holds each packet between two DCs for its link's delay, in user space.

The kernel has no netem. Instead, iptables sends each delayed direction
(FORWARD, from one DC's subnet to another's) to a netfilter queue of its
own; this process keeps every queued packet and gives the kernel its
verdict (accept) once the packet is due. Only the first 20 bytes of each
packet are copied up (its IP header, for its length); the packet itself
stays in the kernel.

It runs at real-time priority, because on a machine whose cores the
brokers' JVMs keep busy a normal-priority delayer wakes late and the
delay grows with the load. A packet's delay counts from when the kernel
received it (the stamp NFQUEUE passes on, which the kernel takes only while
some socket asks for receive stamps: the delayer holds one that does), not
from when this process got to read it: that wait, up to half a
millisecond per packet on a busy testbed, is then part of the delay rather
than added to it. SIGHUP reloads the configuration (a changed
delay applies to packets that arrive from then on; held ones keep their
time); SIGTERM lets every held packet go and exits.
"""

from __future__ import annotations

import collections
import json
import os
import select
import signal
import socket
import struct
import time
from pathlib import Path

from .links import Link, Schedule

MAX_QUEUE_LEN = 65536  # packets the kernel may hold for one queue
SOCKET_BUFFER = 16 * 1024 * 1024
HEADER_BYTES = 20  # an IPv4 header: its bytes 2-3 are the packet's length
STATS_INTERVAL = 1.0
RT_PRIORITY = 50
SO_TIMESTAMP = getattr(socket, "SO_TIMESTAMP", 29)  # Linux's value; Python's socket module does not name it
MAX_STAMP_AGE_S = 1.0  # an older (or future) stamp is a clock step, not a wait: the packet counts from its read


class Lateness:
    """How late held packets left, past their due time: a count per bucket (upper bound in ms), since the start.

    What the delayer adds to the link's delay itself (waking late under load); a round trip measured between two
    nodes also holds the nodes' own scheduling, this does not."""

    BOUNDS_MS = (0.1, 0.5, 1, 2, 5, 10, 50, float("inf"))

    def __init__(self):
        self.buckets = [0] * len(self.BOUNDS_MS)

    def add(self, seconds):
        ms = seconds * 1000
        for i, bound in enumerate(self.BOUNDS_MS):
            if ms <= bound:
                self.buckets[i] += 1
                return

    def counts(self):
        names = ("inf" if b == float("inf") else f"{b:g}" for b in self.BOUNDS_MS)
        return dict(zip(names, self.buckets, strict=True))


def arrival(now, stamp, wall):
    """When a packet read at `now` (monotonic) reached the kernel: its receive stamp (`stamp`, wall clock, 0 when
    the kernel gave none) moved onto the monotonic clock by the wall clock read beside now; `now` itself without a
    usable stamp."""
    waited = wall - stamp
    return now - waited if stamp and 0.0 <= waited <= MAX_STAMP_AGE_S else now


def late_share(before, after, over_ms=1.0):
    """The share of the packets released between two stats reads that left more than over_ms late, and how many."""
    bounds = [float(k) for k in after]
    counts = {k: after[k] - (before or {}).get(k, 0) for k in after}
    total = sum(counts.values())
    late = sum(n for (k, n), b in zip(counts.items(), bounds, strict=True) if b > over_ms)
    return {"released": total, "late": late, "share": round(late / total, 5) if total else None}


def load_links(path):
    """{queue: Link} of the configuration file's active links."""
    config = json.loads(Path(path).read_text())
    links = [Link(**item) for item in config["links"]]
    return {link.queue: link for link in links if link.active}


class Direction:
    """One delayed direction: its queue, its schedule and the packets it holds, oldest first."""

    def __init__(self, link, on_packet):
        from netfilterqueue import COPY_PACKET, NetfilterQueue  # noqa: PLC0415  only where the delayer runs

        self.link, self.schedule = link, Schedule(link)
        self.held = collections.deque()
        self.packets = self.bytes = self.dropped = self.held_max = self.unstamped = 0
        self.lateness, self.read_wait = Lateness(), Lateness()
        self.queue = NetfilterQueue()
        try:
            self.queue.bind(
                link.queue, lambda pkt: on_packet(self, pkt), max_len=MAX_QUEUE_LEN, mode=COPY_PACKET,
                range=HEADER_BYTES, sock_len=SOCKET_BUFFER,
            )  # fmt: skip
        except OSError as exc:
            # The kernel lets one process bind a queue: the usual holder is the delayer of another checkout's
            # testbed, still running. (netfilterqueue says "Failed to create queue N." for that alone.)
            if not str(exc).startswith("Failed to create queue"):
                raise
            raise OSError(
                f"{exc}: another process holds NFQUEUE {link.queue}, most likely the WAN delayer of another "
                "checkout's testbed (`make down` there, or: ps -ef | grep 'testkit.wan run')"
            ) from exc
        self.fd = self.queue.get_fd()

    def retime(self, link):
        """A new delay, jitter or rate for packets from now on; those held keep their time and order."""
        schedule = Schedule(link)
        schedule.last_departure = self.schedule.last_departure
        self.link, self.schedule = link, schedule

    def release(self, now):
        held = self.held
        while held and held[0][0] <= now:
            due, pkt = held.popleft()
            pkt.accept()
            self.lateness.add(now - due)

    def close(self):
        while self.held:
            self.held.popleft()[1].accept()
        self.queue.unbind()

    def stats(self):
        return {
            "delay_ms": self.link.delay_ms, "jitter_ms": self.link.jitter_ms, "rate_mbit": self.link.rate_mbit,
            "queue": self.link.queue, "packets": self.packets, "bytes": self.bytes, "dropped": self.dropped,
            "held": len(self.held), "held_max": self.held_max, "late_ms": self.lateness.counts(),
            "read_wait_ms": self.read_wait.counts(), "unstamped": self.unstamped,
        }  # fmt: skip


class Delayer:
    def __init__(self, config_path, stats_path):
        self.config_path, self.stats_path = Path(config_path), Path(stats_path)
        self.directions = {}  # queue: Direction
        self.reload_wanted, self.stop_wanted = True, False

    def on_packet(self, direction, pkt):
        now = time.monotonic()
        arrived = arrival(now, pkt.get_timestamp(), time.time())
        if arrived == now:
            direction.unstamped += 1
        direction.read_wait.add(now - arrived)
        size = struct.unpack_from("!H", pkt.get_payload(), 2)[0]
        due = direction.schedule.due(arrived, size)
        direction.packets += 1
        direction.bytes += size
        if due is None:
            direction.dropped += 1
            pkt.drop()
        elif due <= now:
            pkt.accept()
        else:
            direction.held.append((due, pkt))
            direction.held_max = max(direction.held_max, len(direction.held))

    def reload(self):
        wanted = load_links(self.config_path)
        for queue in sorted(set(self.directions) - set(wanted)):
            self.directions.pop(queue).close()
        for queue, link in wanted.items():
            if queue in self.directions:
                self.directions[queue].retime(link)
            else:
                self.directions[queue] = Direction(link, self.on_packet)
        self.reload_wanted = False

    def write_stats(self):
        usage = os.times()
        stats = {
            "pid": os.getpid(),
            "cpu_seconds": round(usage.user + usage.system, 3),
            "monotonic": time.monotonic(),
            "links": {f"{d.link.src}>{d.link.dst}": d.stats() for d in self.directions.values()},
        }
        tmp = self.stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stats, indent=1) + "\n")
        tmp.replace(self.stats_path)

    def run(self):
        # Asking for receive stamps on any socket turns the kernel's stamping of received packets on (all of them,
        # while one socket asks): NFQUEUE then passes each packet's stamp on. Held open until the process ends.
        stamps = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        stamps.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP, 1)
        signal.signal(signal.SIGHUP, lambda *_: setattr(self, "reload_wanted", True))
        signal.signal(signal.SIGTERM, lambda *_: setattr(self, "stop_wanted", True))
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
        except OSError as exc:
            print(f"delayer: no real-time priority ({exc}); delays will grow under load", flush=True)
        next_stats = 0.0
        try:
            while not self.stop_wanted:
                if self.reload_wanted:
                    self.reload()
                    print(f"delayer: {len(self.directions)} delayed direction(s): "
                          + ", ".join(f"{d.link.src}>{d.link.dst} {d.link.delay_ms:g} ms"
                                      for d in self.directions.values()), flush=True)  # fmt: skip
                now = time.monotonic()
                if now >= next_stats:
                    self.write_stats()
                    next_stats = now + STATS_INTERVAL
                heads = [d.held[0][0] for d in self.directions.values() if d.held]
                timeout = max(0.0, min([*heads, next_stats]) - now)
                by_fd = {d.fd: d for d in self.directions.values()}
                try:
                    ready, _, _ = select.select(list(by_fd), [], [], timeout)
                except InterruptedError:
                    ready = []
                for fd in ready:
                    by_fd[fd].queue.run(block=False)
                now = time.monotonic()
                for direction in self.directions.values():
                    direction.release(now)
        finally:
            for direction in self.directions.values():
                direction.close()
            self.directions = {}
            self.write_stats()
            stamps.close()
