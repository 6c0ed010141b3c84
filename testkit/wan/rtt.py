"""Round trips between the testbed's DCs, measured from inside a node of each DC.

A TCP connect to a port nobody listens on is one round trip answered by
the other node's kernel alone (SYN out, RST back: "connection refused"), so
the time it takes from a container in DC A to a node in DC B is the RTT the
nodes themselves see: A->B's delay plus B->A's. No process on the target
wakes for it: a probe of a listening port (sshd's) would fork a process on
the target every time, a load of its own on a busy machine. The probe runs
in the container with its own Python, prints one JSON line per round, and
knows nothing of the delayer's settings.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import threading
import uuid

# Run in a node: argv = interval, rounds, seconds, a tag (only to find the process again), then host:port
# targets; one JSON line {target: ms} per round (an answered connect, refused or accepted, is a round trip; a
# timeout or an unreachable host is None). It stops after `rounds` rounds or `seconds` seconds, whichever first:
# ending the `podman exec` that started it does not end it.
PROBE = r"""
import json, socket, sys, time
interval, rounds, seconds, targets = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[5:]
deadline = time.monotonic() + seconds
for _ in range(rounds):
    started = time.monotonic()
    if started > deadline:
        break
    out = {}
    for target in targets:
        host, port = target.rsplit(":", 1)
        t0 = time.perf_counter()
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            out[target] = (time.perf_counter() - t0) * 1000
        except ConnectionRefusedError:
            out[target] = (time.perf_counter() - t0) * 1000
        except OSError:
            out[target] = None
    print(json.dumps(out), flush=True)
    time.sleep(max(0.0, interval - (time.monotonic() - started)))
"""


# The discard port: no testbed node listens on it, so the node's kernel answers with a reset.
CLOSED_PORT = 9


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


def summary(samples):
    """{"n", "failed", "p50_ms", "p99_ms", "max_ms", "min_ms"} of a list of RTTs in ms (None: no answer)."""
    ok = [s for s in samples if s is not None]
    return {
        "n": len(samples),
        "failed": len(samples) - len(ok),
        "min_ms": round(min(ok), 2) if ok else None,
        "p50_ms": round(statistics.median(ok), 2) if ok else None,
        "p99_ms": round(percentile(ok, 0.99), 2) if ok else None,
        "max_ms": round(max(ok), 2) if ok else None,
    }


class RttProbe(threading.Thread):
    """Probes, from each DC's probe node, every other DC's probe node, each interval, until stop() or rounds.

    probes: {dc: (container, address)}; near: {dc: address} of another node of the probe's own DC (not behind the
    WAN), probed in the same rounds. Results: {(from, to): [ms or None]}, (dc, dc) the near node's.
    """

    def __init__(self, probes, interval=1.0, rounds=100000, port=CLOSED_PORT, seconds=4 * 3600, near=None):
        super().__init__(daemon=True)
        self.probes, self.interval, self.rounds, self.port = dict(probes), interval, rounds, port
        self.near = dict(near or {})
        self.seconds = seconds
        self.tag = f"stretch-rtt-{uuid.uuid4().hex[:12]}"
        self.samples = {(a, b): [] for a in self.probes for b in self.probes if a != b or a in self.near}
        self._procs = []
        self.error = None

    def _read(self, src, proc, targets):
        for line in proc.stdout:
            try:
                answer = json.loads(line)
            except ValueError:
                continue
            for dst, target in targets.items():
                self.samples[(src, dst)].append(answer.get(target))

    def run(self):
        readers = []
        try:
            for src, (container, _) in sorted(self.probes.items()):
                targets = {dst: f"{addr}:{self.port}" for dst, (_, addr) in self.probes.items() if dst != src}
                if src in self.near:
                    targets[src] = f"{self.near[src]}:{self.port}"
                proc = subprocess.Popen(
                    ["podman", "exec", "-i", container, "python3", "-u", "-c", PROBE, str(self.interval),
                     str(self.rounds), str(self.seconds), self.tag, *targets.values()],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                )  # fmt: skip
                self._procs.append(proc)
                reader = threading.Thread(target=self._read, args=(src, proc, targets), daemon=True)
                reader.start()
                readers.append(reader)
            for reader in readers:
                reader.join()
        except Exception as exc:  # noqa: BLE001  reported by stop(), in the caller's thread
            self.error = exc

    def stop(self):
        # The probes in the nodes outlive their `podman exec`: end them by their tag first.
        for container, _ in self.probes.values():
            subprocess.run(["podman", "exec", container, "pkill", "-f", self.tag], capture_output=True, timeout=60)
        for proc in self._procs:
            proc.terminate()
        self.join(timeout=30)
        for proc in self._procs:
            proc.wait(timeout=30)
        if self.error is not None:
            raise RuntimeError(f"the RTT probe failed: {self.error}") from self.error
        return self.report()

    def report(self):
        """{"dc1-dc2": summary} per unordered pair, both directions' probes together; with near nodes, its
        "wan_floor_ms" is {probing dc: wan_floor} for each end that has one."""
        out = {}
        for a, b in sorted(self.samples):
            if a < b:
                out[f"{a}-{b}"] = summary(self.samples[(a, b)] + self.samples[(b, a)])
                floors = {s: wan_floor(self.samples[(s, d)], self.samples[(s, s)]) for s, d in ((a, b), (b, a))
                          if s in self.near}  # fmt: skip
                if floors:
                    out[f"{a}-{b}"]["wan_floor_ms"] = floors
        return out


def wan_floor(far, near):
    """What the WAN adds to a round trip's floor: the shortest round trip to another DC less the shortest, in the
    same rounds from the same node, to a node of its own DC. What both paths spend in the probing node and in the
    answering node's kernel is not the WAN's, nor is a slow spell of the machine that lifts both floors."""
    far, near = [ms for ms in far if ms is not None], [ms for ms in near if ms is not None]
    return round(min(far) - min(near), 2) if far and near else None


def measure(probes, rounds=20, interval=0.2, port=CLOSED_PORT, near=None):
    """One bounded measurement: {"dc1-dc2": summary}."""
    probe = RttProbe(probes, interval=interval, rounds=rounds, port=port, near=near)
    probe.start()
    probe.join(timeout=rounds * (interval + 10) + 30)
    return probe.stop()
