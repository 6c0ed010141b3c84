"""make bench-wan: what the WAN between the DCs costs, measured at 0, 30 and 100 ms RTT beside a model.

Against the running testbed (make up converge), with clients placed in the
DCs (testkit.dcnet), on the topic `bench` (8 partitions, RF 4, leaders on all
four brokers). For each broker-DC round trip (the tiebreaker keeps the
inventory's):

1. acks=all produce latency at 200 and 1000 records/s of 200 bytes, after a
   warm-up whose figures are kept apart, for
   (a) a producer in dc1 writing to one partition on each dc1 leader,
   (b) a producer in dc2 writing to the same partitions,
   (c) a leader-local producer in dc1 writing to every partition led in dc1
       (two per broker), following the leaders as they move,
   each with librdkafka's defaults and with the recommended settings
   (`RECOMMENDED_PRODUCER`). With (a), consumers time each record end to end:
   in dc1 reading the leader, in dc2 reading the leader, in dc2 reading its
   own DC's follower; and sample their lag each second;
2. the brokers' request metrics over each run: where a Produce spends its
   time (RemoteTimeMs: waiting on the far replicas) and how long the far
   followers' fetches wait at the leader;
3. a controller failover: the active controller's JVM killed, timed to the
   new leader as the survivors' own metrics report it; the median counts
   every kill, and a failed one is a problem (the benchmark exits non-zero);
4. a rolling restart of every node, timed per node, with producer (c)
   writing through it and the bytes that crossed between the DCs counted by
   the host against what it produced (2.0N for a leader-local producer).

Every figure is printed beside its model (testkit.bench.wanmodel) as
measured/model; the model's one measured input comes from a calibration run
at RTT 0 of its own (Bench.calibrate). reports/bench-wan.json keeps every figure and
docs/images/wan-latency-cdf.png the latency CDFs.
"""

from __future__ import annotations

import argparse
import datetime
import http.client
import json
import math
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka.admin import AdminClient, ConfigResource

from testkit import REPO, dcnet, drill, traffic
from testkit import cluster as inventory
from testkit.bench import clients as client_cases
from testkit.bench import wanmodel
from testkit.cluster import playbook, wait_until
from testkit.loadtest import harness
from testkit.wan import control
from testkit.wan import inventory as wan_inventory
from testkit.wan.delayer import late_share

TOPIC = "bench"
RTTS = (0, 30, 100)
PARTS = ("latency", "clients", "quiet", "bulk", "link", "failover", "restart")
# The parts of a Produce request's time, as the brokers' request metrics split it.
PRODUCE_PARTS = {"queue": "RequestQueueTimeMs", "local": "LocalTimeMs", "remote": "RemoteTimeMs",
                 "response_queue": "ResponseQueueTimeMs", "response_send": "ResponseSendTimeMs"}  # fmt: skip
QUIET_RATE = 4  # records/s over two leaders: an append every 500 ms on each
RATES = (200, 1000)
SIZE = 200
CDF_PNG = REPO / "docs/images/wan-latency-cdf.png"
REPORT = REPO / "reports/bench-wan.json"
# KafkaRaftClient answers a follower's Fetch at the latest after this long.
RAFT_FETCH_MAX_WAIT_MS = 500
FETCH_TIMEOUT_MS = 2000  # controller.quorum.fetch.timeout.ms
BULK_PORT = 5201
FAILOVER_KILLS = 3
ETHERNET_HEADER_BYTES = 14  # counted by a veth, not by the host's routed counters
BULK_RATE, BULK_SIZE = 20000, 1000  # 20 MB/s asked of one producer: more than the link carries at 100 ms
# One bulk TCP stream: the receiver counts what arrives until the sender closes; one JSON line.
RECEIVER = r"""
import json, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(60)
c, _ = s.accept(); c.settimeout(60)
n, first, last = 0, None, None
while True:
    b = c.recv(1 << 20)
    if not b:
        break
    now = time.monotonic(); first = first or now; last = now; n += len(b)
print(json.dumps({"bytes": n, "seconds": (last - first) if n else 0}))
"""
SENDER = r"""
import socket, sys, time
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
chunk, end = b"x" * (1 << 16), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    c.sendall(chunk)
c.close()
"""


# The producer settings docs/wan.md recommends over a WAN (librdkafka, acks=all, idempotent): one request per
# connection in flight, since the broker serves a connection's requests one at a time and more in flight only
# queue there, while records gather into the next request anyway. linger.ms stays librdkafka's 5 ms: a longer
# one only delays a quiet producer's records.
RECOMMENDED_PRODUCER = {"max.in.flight.requests.per.connection": "1", "linger.ms": "5"}
# The consumers' fetch.wait.max.ms in the recommended runs (librdkafka's default: 500).
RECOMMENDED_CONSUMER_FETCH_WAIT_MS = 100


def settings_args(settings):
    return [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]


class Bench:
    def __init__(self, cluster, workdir, seconds, warmup):
        self.cluster, self.workdir, self.seconds, self.warmup = cluster, Path(workdir), seconds, warmup
        self.config_file = cluster.client_config_file(workdir)
        self.config = {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}
        self.racks = harness.broker_racks(self.config)
        self.first, self.second = cluster.dcs
        self.clients = {}

    # -- reading the cluster ---------------------------------------------------------------------------------

    def scrape(self, nodes=None):
        out = {}
        for node in nodes or self.cluster.nodes:
            url = f"http://{node.address}:{self.cluster.metrics_port}/metrics"
            with urllib.request.urlopen(url, timeout=10) as response:
                out[node.node_id] = traffic.request_times(response.read().decode())
        return out

    def led_by(self):
        """{dc: {broker: [partitions it leads]}} of the bench topic now."""
        out = {dc: {} for dc in self.cluster.dcs}
        for p, leader in sorted(harness.partition_leaders(self.config, TOPIC).items()):
            out[self.racks[leader]].setdefault(leader, []).append(p)
        return out

    def requests_between(self, before, after):
        """Per broker: the Produce time and its part waiting on replicas, and the FetchFollower wait, over a run."""
        out = {}
        for node in self.cluster.brokers:
            a, b = before[node.node_id], after[node.node_id]
            produce_n, produce_ms = traffic.mean_between(a, b, "Produce", "TotalTimeMs")
            _, remote_ms = traffic.mean_between(a, b, "Produce", "RemoteTimeMs")
            follower_n, follower_ms = traffic.mean_between(a, b, "FetchFollower", "TotalTimeMs")
            consumer_n, consumer_ms = traffic.mean_between(a, b, "FetchConsumer", "TotalTimeMs")
            out[str(node.node_id)] = {
                "produce_requests": produce_n, "produce_ms": produce_ms, "produce_remote_ms": remote_ms,
                "fetch_follower_requests": follower_n, "fetch_follower_ms": follower_ms,
                "fetch_consumer_requests": consumer_n, "fetch_consumer_ms": consumer_ms,
            }  # fmt: skip
        return out

    def produce_split(self, before, after):
        """Per broker, over a run: its Produce requests and their mean time, split as its request metrics split
        it: waiting in the request queue, handled locally, waiting on the far replicas (remote), and the response
        queued and sent."""
        out = {}
        for node in self.cluster.brokers:
            a, b = before[node.node_id], after[node.node_id]
            n, total = traffic.mean_between(a, b, "Produce", "TotalTimeMs")
            parts = {name: traffic.mean_between(a, b, "Produce", metric)[1] for name, metric in PRODUCE_PARTS.items()}
            response = [parts.pop("response_queue"), parts.pop("response_send")]
            parts["response"] = None if None in response else round(sum(response), 2)
            out[str(node.node_id)] = {"requests": n, "total_ms": total, **{f"{k}_ms": v for k, v in parts.items()}}
        return out

    # -- clients in the DCs --------------------------------------------------------------------------------

    def client(self, dc, action, *args, seconds=None, topic=TOPIC):
        cmd = [sys.executable, "-m", "testkit.bench.wanclient", action, "--bootstrap-servers",
               self.cluster.bootstrap_servers, "--client-config", str(self.config_file), "--topic", topic,
               "--dc", dc, "--seconds", str(seconds or self.seconds), "--warmup", str(self.warmup), *args]  # fmt: skip
        return subprocess.Popen(self.clients[dc].wrap(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def answer(proc, timeout):
        out, err = proc.communicate(timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"a benchmark client failed ({proc.returncode}): {err.strip()[-2000:]}")
        return json.loads(out.strip().splitlines()[-1])

    def run(self, producer_dc, partitions, settings, rate, consumers=False, seconds=None, fetch_wait_ms=500):
        """One run: a producer (partitions: a list, or "leader-local"), optionally the three timing consumers (with
        that fetch.wait.max.ms)."""
        seconds = seconds or self.seconds
        target = (
            ["--leader-local"] if partitions == "leader-local" else ["--partitions", ",".join(map(str, partitions))]
        )
        readers = {}
        if consumers:
            parts = ["--partitions", ",".join(map(str, partitions)), "--fetch-wait-ms", str(fetch_wait_ms)]
            extra = seconds + 4
            readers = {
                "leader_dc_leader": self.client(self.first, "consume", *parts, "--rack", self.first, seconds=extra),
                "far_dc_leader": self.client(self.second, "consume", *parts, seconds=extra),
                "far_dc_follower": self.client(self.second, "consume", *parts, "--rack", self.second, seconds=extra),
            }
            time.sleep(2)
        before = self.scrape(self.cluster.brokers)
        delayer_before = control.State().stats()
        probe = drill.wan_probe()
        probe.start()
        args = [*target, "--rate", str(rate), "--size", str(SIZE), *settings_args(settings)]
        producer = self.client(producer_dc, "produce", *args, seconds=seconds)
        result = {"producer": self.answer(producer, seconds + self.warmup + 180)}
        result["wan_rtt"] = probe.stop()
        delayer_after = control.State().stats()
        after = self.scrape(self.cluster.brokers)
        result["brokers"] = self.requests_between(before, after)
        result["delayer_cpu_per_second"] = round(
            (delayer_after["cpu_seconds"] - delayer_before["cpu_seconds"])
            / (delayer_after["monotonic"] - delayer_before["monotonic"]), 3)  # fmt: skip
        result["delayer_late"] = {
            link: late_share(delayer_before["links"].get(link, {}).get("late_ms"), found["late_ms"])
            for link, found in delayer_after["links"].items() if "late_ms" in found
        }  # fmt: skip
        for name, proc in readers.items():
            result[name] = self.answer(proc, seconds + self.warmup + 60)
        return result

    # -- the three parts -----------------------------------------------------------------------------------

    def latencies(self, rtt, rates=RATES, only=None):
        """Every case at every rate, with librdkafka's defaults and with the recommended settings (only: one case)."""
        led = self.led_by()
        one_each = sorted(parts[0] for parts in led[self.first].values())
        per_broker = max(len(parts) for parts in led[self.first].values())
        cases = {
            "a_local": (self.first, one_each, 1),
            "b_remote": (self.second, one_each, 1),
            "c_leader_local": (self.first, "leader-local", per_broker),
        }
        out = []
        for rate in rates:
            for case, (dc, partitions, p) in cases.items():
                if only and case != only:
                    continue
                for label, settings in (("defaults", {}), ("recommended", RECOMMENDED_PRODUCER)):
                    print(f"  rtt {rtt} ms, {rate}/s, {case}, {label} {settings}", flush=True)
                    wait = RECOMMENDED_CONSUMER_FETCH_WAIT_MS if label == "recommended" else 500
                    found = self.run(dc, partitions, settings, rate, consumers=case == "a_local", fetch_wait_ms=wait)
                    print(f"    {brief(found)}", flush=True)
                    found.update(rtt=rtt, rate=rate, case=case, settings_label=label, settings=settings,
                                 partitions_per_broker=p, partitions=len(one_each) * p)  # fmt: skip
                    out.append(found)
        return out

    def calibrate(self, rate=200):
        """The model's one measured input (lan_produce_ms), from a run of its own at RTT 0 whose figures no model
        figure is compared with: a producer in the first DC writing one partition of each leader there, with the
        recommended settings."""
        one_each = sorted(parts[0] for parts in self.led_by()[self.first].values())
        return self.run(self.first, one_each, RECOMMENDED_PRODUCER, rate)

    def broker_setting(self, name):
        """A setting as the first broker runs it (its describe_configs), for the model's inputs."""
        admin = AdminClient(self.config)
        resource = ConfigResource(ConfigResource.Type.BROKER, str(self.cluster.brokers[0].node_id))
        found = admin.describe_configs([resource])[resource].result(timeout=30)
        return int(found[name].value)

    def controller_failover(self, rtt):
        """The active controller's JVM killed: time to a new leader, by the new leader's own log (its transition to
        Leader, on the clock the host and its containers share), and the epochs the survivors went through."""
        controllers = self.cluster.controllers
        before = self.scrape(controllers)
        old = inventory.quorum_leader_id(self.cluster)
        victim = next(c for c in controllers if c.node_id == old)
        survivors = [c for c in controllers if c.node_id != old]
        killed_at = time.time()
        subprocess.run(["podman", "exec", victim.host, "systemctl", "kill", "-s", "KILL", "kafka"], check=True)

        def new_leader():
            try:
                found = self.scrape(survivors)
            except OSError:
                return None
            leaders = {n["counters"].get("raft_leader") for n in found.values()}
            return found if len(leaders) == 1 and leaders.pop() not in (None, -1, old) else None

        after = wait_until(new_leader, timeout=60, interval=0.2)
        elected_at = min((t for c in survivors if (t := self.became_leader_at(c)) and t > killed_at), default=None)
        subprocess.run(["podman", "exec", victim.host, "systemctl", "start", "kafka"], check=True)
        back = wait_until(lambda: self.voters_caught_up(controllers), timeout=180, interval=1)
        vote_rtt = max(self.rtt_between(a.dc, b.dc) for a in survivors for b in survivors if a != b)
        model = wanmodel.controller_failover_ms(FETCH_TIMEOUT_MS, RAFT_FETCH_MAX_WAIT_MS, vote_rtt)
        measured = round((elected_at - killed_at) * 1000) if elected_at else None
        epochs = (max(n["counters"]["raft_epoch"] for n in after.values())
                  - before[old]["counters"]["raft_epoch"]) if after else None  # fmt: skip
        return {"killed": victim.host, "new_leader_after_ms": measured, "model_ms": model,
                "ratio": wanmodel.ratio(measured, model), "epochs": epochs, "quorum_back": bool(back)}  # fmt: skip

    def became_leader_at(self, node):
        """When the node last became the quorum's leader, by its server.log (epoch seconds), or None."""
        out = subprocess.run(["podman", "exec", node.host, "grep", "-h", "Completed transition to Leader",
                              "/var/log/kafka/server.log"], capture_output=True, text=True).stdout  # fmt: skip
        lines = out.strip().splitlines()
        if not lines:
            return None
        stamp = lines[-1][1:24]  # [2026-11-25 03:18:33,761]
        return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=datetime.UTC).timestamp()

    def link_throughput(self, seconds=10):
        """One bulk TCP stream from a client in the first DC to one in the second, through the delayer: MB/s,
        and the delayer's CPU per second and per GB meanwhile (the kernel autotunes the stream's window)."""
        near, far = self.clients[self.first], self.clients[self.second]
        host = far.address.split("/")[0]
        receiver = subprocess.Popen(far.wrap([sys.executable, "-c", RECEIVER, host, str(BULK_PORT)]),
                                    stdout=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(1)
        cpu0 = control.State().stats()
        subprocess.run(near.wrap([sys.executable, "-c", SENDER, host, str(BULK_PORT), str(seconds)]), check=True,
                       timeout=seconds + 60)  # fmt: skip
        found = json.loads(receiver.communicate(timeout=90)[0])
        cpu1 = control.State().stats()
        mb = found["bytes"] / 1e6
        cpu = cpu1["cpu_seconds"] - cpu0["cpu_seconds"]
        wall = cpu1["monotonic"] - cpu0["monotonic"]
        return {"mb_per_second": round(mb / found["seconds"], 1) if found["seconds"] else None, "mb": round(mb),
                "delayer_cpu_per_second": round(cpu / wall, 3) if wall else None,
                "delayer_cpu_seconds_per_gb": round(cpu / (mb / 1000), 2) if mb else None}  # fmt: skip

    def bulk(self, rtt, seconds=10):
        """acks=all written as fast as one producer in the first DC can, to one partition per leader there: what
        the far replicas' fetches carry across the link (their socket buffers against the bandwidth x RTT)."""
        one_each = sorted(parts[0] for parts in self.led_by()[self.first].values())
        args = ["--partitions", ",".join(map(str, one_each)), "--rate", str(BULK_RATE), "--size", str(BULK_SIZE)]
        found = self.answer(self.client(self.first, "produce", *args, seconds=seconds), seconds + self.warmup + 180)
        mb = found["steady"]["n"] * BULK_SIZE / 1e6
        return {"rtt": rtt, "acked_mb_per_second": round(mb / seconds, 2), "errors": found["errors"],
                "unconfirmed": found["unconfirmed"], "p50_ms": found["steady"].get("p50"),
                "p99_ms": found["steady"].get("p99")}  # fmt: skip

    def calm(self, seconds, rate=1000):
        """A calm period under load: the quorum's elections, ISR shrinks and fenced brokers it saw (all should be 0).

        A producer in the first DC writes `rate` records/s to one partition per leader there while consumers read
        them in both DCs; every 5 s the nodes' metrics are read: the quorum's epoch on each controller (one more per
        election), each broker's ISR shrinks, the active controller's fenced brokers."""
        one_each = sorted(parts[0] for parts in self.led_by()[self.first].values())
        parts = ["--partitions", ",".join(map(str, one_each))]
        readers = [self.client(self.second, "consume", *parts, "--rack", self.second, seconds=seconds),
                   self.client(self.first, "consume", *parts, "--rack", self.first, seconds=seconds)]  # fmt: skip
        producer = self.client(self.first, "produce", *parts, "--rate", str(rate), "--size", str(SIZE),
                               seconds=seconds)  # fmt: skip
        start = self.scrape()
        fenced_max, samples = 0, 0
        deadline = time.monotonic() + seconds + self.warmup
        while time.monotonic() < deadline:
            time.sleep(5)
            now = self.scrape()
            fenced_max = max([fenced_max] + [n["counters"].get("fenced_brokers", 0) for n in now.values()])
            samples += 1
        written = self.answer(producer, seconds + self.warmup + 180)
        read = [self.answer(r, seconds + self.warmup + 60) for r in readers]
        end = self.scrape()

        def delta(key):
            return {str(n): end[n]["counters"][key] - start[n]["counters"][key]
                    for n in end if key in end[n]["counters"] and key in start[n]["counters"]}  # fmt: skip

        epochs = delta("raft_epoch")
        return {
            "seconds": seconds, "rate": rate, "samples": samples,
            "controller_elections": max(epochs.values()) if epochs else None, "raft_epoch_changes": epochs,
            "isr_shrinks": sum(delta("isr_shrinks").values()), "isr_shrinks_by_broker": delta("isr_shrinks"),
            "fenced_brokers_max": fenced_max,
            "producer": {k: written[k] for k in ("acknowledged", "errors", "unconfirmed", "steady")},
            "consumers_p99_ms": [r["steady"].get("p99") for r in read],
        }  # fmt: skip

    def voters_caught_up(self, controllers):
        """Every controller answers its metrics and sits at the quorum's high watermark (the restarted one too), within
        the few records the quorum appends between two of our reads."""
        try:
            found = self.scrape(controllers)
        except OSError:
            return False
        marks = [n["counters"].get("raft_high_watermark") for n in found.values()]
        ends = [n["counters"].get("raft_log_end") for n in found.values()]
        return None not in marks and None not in ends and min(ends) >= max(marks) - 20 > 0

    def rtt_between(self, a, b):
        delays = {(x.src, x.dst): x.delay_ms for x in control.State().links()}
        return 0.0 if a == b else delays.get((a, b), 0.0) + delays.get((b, a), 0.0)

    def rolling_restart(self, rtt):
        """Every node restarted in turn under producer (c); per node time and what crossed the link, twice: record
        bytes by the brokers' counters (read every 2 s, summed across each node's restart) against the record
        bytes the leaders took, and TCP payload by the kernel on both sides (the protocol's and TLS's overhead
        in, which grows as batches shrink)."""
        settings = RECOMMENDED_PRODUCER
        ports = {self.cluster.client_port, self.cluster.replication_port}
        near = self.clients[self.first]
        counters = CounterSampler(self.cluster)
        with dcnet.RoutedBytes(self.cluster.dcs, ports) as routed:
            before, sent_before = routed.read(), near.sent()
            counters.start()
            args = ["--leader-local", "--rate", "200", "--size", str(SIZE), *settings_args(settings)]
            producer = self.client(self.first, "produce", *args, seconds=900)
            time.sleep(self.warmup + 5)
            # Without the smoke test at its end: its own writes and reads would cross the link too.
            run = playbook(self.cluster, "rolling_restart", log_dir=REPO / "reports/bench-wan",
                           kafka_ops_restart_smoke_test=False)  # fmt: skip
            producer.terminate()  # the producer stops writing, flushes and reports on SIGTERM
            written = self.answer(producer, 300)
            time.sleep(5)  # the far followers fetch the last records
            summed = counters.stop()
            crossed = dcnet.between(before, routed.read())
            sent_bytes, sent_packets = (a - b for a, b in zip(near.sent(), sent_before, strict=True))
        flows = traffic.totals(traffic.cross_dc({}, summed.total(), self.racks, TOPIC, self.first))
        produced_records = sum(traffic.produced({}, summed.total(), self.racks, TOPIC).values())
        crossed_payload = sum(traffic.wire_payload(crossed).values())
        produced_payload = max(0, sent_bytes - sent_packets * (traffic.HEADER_BYTES + ETHERNET_HEADER_BYTES))
        restarts = run.stats.get("kafka_restarts", []) if run.ok else []
        return {
            "ok": run.ok, "wall_seconds": run.seconds, "nodes": len(restarts),
            "per_node_seconds": round(run.seconds / len(restarts), 1) if restarts else None,
            "gate_seconds": round(sum(g["gate_before_seconds"] + g["gate_after_seconds"] for g in restarts), 1),
            "producer": {k: written[k] for k in ("acknowledged", "errors", "unconfirmed", "steady",
                                                 "leader_moves_followed")},
            "produced_record_bytes": produced_records, "crossed_record_bytes": flows,
            "counter_restarts_seen": summed.restarts,
            "crossed_per_produced_records": round(flows["all"] / produced_records, 3) if produced_records else None,
            "produced_payload_bytes": produced_payload, "crossed_payload_bytes": crossed_payload,
            "crossed_by_pair": {f"{a}->{b}": v for (a, b), v in traffic.wire_payload(crossed).items()},
            "crossed_per_produced": round(crossed_payload / produced_payload, 3) if produced_payload else None,
            "model_per_produced": 2.0,
        }  # fmt: skip


class CounterSampler(threading.Thread):
    """Reads every broker's byte counters every 2 s into a traffic.Accumulated, skipping a broker that does not
    answer (restarting), until stop()."""

    def __init__(self, cluster, interval=2.0):
        super().__init__(daemon=True)
        self.cluster, self.interval = cluster, interval
        self.summed, self.stopping = traffic.Accumulated(), threading.Event()

    def read(self):
        found, started = {}, {}
        for node in self.cluster.brokers:
            try:
                url = f"http://{node.address}:{self.cluster.metrics_port}/metrics"
                with urllib.request.urlopen(url, timeout=5) as response:
                    text = response.read().decode()
                found[node.node_id], started[node.node_id] = traffic.broker_counters(text), traffic.start_time(text)
            except (OSError, http.client.HTTPException, ValueError):
                continue  # restarting: read again next time
        self.summed.add(found, started)

    def run(self):
        while not self.stopping.wait(self.interval):
            self.read()

    def stop(self):
        self.stopping.set()
        self.join(timeout=60)
        self.read()
        return self.summed


def brief(found):
    """One line of a run's figures, printed as the run ends."""
    s = found["producer"]["steady"]
    out = f"producer p50 {s.get('p50')} p99 {s.get('p99')} ms ({s['n']} acked, {found['producer']['errors']} errors)"
    for name in ("leader_dc_leader", "far_dc_leader", "far_dc_follower"):
        if name in found:
            e = found[name]["steady"]
            out += f"; {name} p50 {e.get('p50')} p99 {e.get('p99')}"
    pair = found.get("wan_rtt", {})
    out += "; RTT " + ", ".join(f"{k} p50 {v['p50_ms']} p99 {v['p99_ms']}" for k, v in sorted(pair.items()))
    late = [v for v in found.get("delayer_late", {}).values() if v["released"]]
    if late:
        share = sum(v["late"] for v in late) / sum(v["released"] for v in late)
        out += f"; delayer: {share:.2%} of {sum(v['released'] for v in late)} packets > 1 ms late"
    return out


def model(found, lan_produce, fetch_wait_ms):
    """The model's figures for one latency run (None for librdkafka's defaults)."""
    if found["settings_label"] != "recommended":
        return None  # librdkafka's defaults queue requests at the broker: see docs/wan.md
    rtt = found["rtt"]
    leader, service = wanmodel.service_ms(rtt, lan_produce, fetch_wait_ms, found["case"] == "b_remote")
    linger = float(found["settings"]["linger.ms"])
    p = found["partitions_per_broker"]
    per_partition = found["rate"] / found["partitions"]
    producer = wanmodel.producer_ms(service, linger, p, per_partition)
    gap = wanmodel.append_gap_ms(service, linger, p, per_partition)
    model = {"leader_produce_ms": leader, "producer": producer}
    if found["case"] == "a_local":
        model["end_to_end_p50"] = wanmodel.end_to_end_ms(producer["p50"], rtt, gap, leader, fetch_wait_ms)
        model["lag_records"] = {
            name: wanmodel.lag_records(found["rate"], latency - producer["p50"] + leader)
            for name, latency in model["end_to_end_p50"].items()
        }
    return model


def finish(report, path=REPORT):
    """The model beside each run, the table, the picture, the problems: from the raw figures of a run (or of a
    saved report)."""
    try:
        report["lan_produce_ms"] = lan_produce = lan_produce_ms(report.get("calibration"))
    except RuntimeError as exc:
        print(f"no model: {exc}")
        lan_produce = None
    for found in report["latency"]:
        found["model"] = model(found, lan_produce, report["replica_fetch_wait_max_ms"]) if lan_produce else None
    if report.get("clients"):
        client_cases.with_model(report["clients"], lan_produce, report["replica_fetch_wait_max_ms"])
    report["problems"] = [p for f in report["failover"].values() for p in f.get("problems", [])]
    path.write_text(json.dumps(report, indent=1) + "\n")
    print(table(report))
    if report.get("clients"):
        print(client_cases.table(report["clients"]))
    if report["latency"]:
        draw(report, CDF_PNG)
        print(f"picture: {CDF_PNG}")
    for problem in report["problems"]:
        print(f"problem: {problem}")
    print(f"report: {path}")


def lan_produce_ms(calibration):
    """The leader's own Produce handling at RTT 0, the model's one measured input: the brokers' mean over the
    calibration run (Bench.calibrate), which is none of the runs the model is compared with."""
    means = [b["produce_ms"] for b in (calibration or {}).get("brokers", {}).values()
             if b["produce_requests"] and b["produce_ms"] is not None]  # fmt: skip
    if not means:
        raise RuntimeError("the model needs its calibration run at RTT 0 (measured with --parts latency) for the "
                           "leader's own Produce time")  # fmt: skip
    return round(sum(means) / len(means), 2)


def table(report):
    rows = ["| RTT | rate | case | settings | producer p50 / p99 (warm-up p99) | model p50 / p99 | measured/model |",
            "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in report["latency"]:
        s, m = r["producer"]["steady"], r["model"]
        model = f"{m['producer']['p50']:.0f} / {m['producer']['p99']:.0f}" if m else "(queueing)"
        ratios = (f"{wanmodel.ratio(s['p50'], m['producer']['p50'])} / {wanmodel.ratio(s['p99'], m['producer']['p99'])}"
                  if m else "")  # fmt: skip
        rows.append(f"| {r['rtt']} | {r['rate']} | {r['case']} | {r['settings_label']} | {s['p50']:.0f} / "
                    f"{s['p99']:.0f} ({r['producer']['warmup'].get('p99', 0):.0f}) | {model} | {ratios} |")  # fmt: skip
    rows += ["", "| RTT | rate | settings | consumer | e2e p50 / p99 | model p50 | measured/model | lag p50 (model) |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in report["latency"]:
        if r["case"] != "a_local":
            continue
        for name in ("leader_dc_leader", "far_dc_leader", "far_dc_follower"):
            s = r[name]["steady"]
            model = r["model"]["end_to_end_p50"][name] if r["model"] else None
            lag = r["model"]["lag_records"][name] if r["model"] else None
            rows.append(f"| {r['rtt']} | {r['rate']} | {r['settings_label']} | {name} | {s['p50']:.0f} / {s['p99']:.0f}"
                        f" | {model and round(model)} | {wanmodel.ratio(s['p50'], model) or ''} | "
                        f"{r[name]['lag_records'].get('p50')} ({lag and round(lag)}) |")  # fmt: skip
    rows += ["", "| RTT set | measured during the runs: p50 / p99 / max | delayer CPU (of one core) "
             "| bulk TCP through it | its CPU per GB |", "|---|---|---|---|---|"]  # fmt: skip
    pair = "-".join(report["broker_dcs"])
    for rtt in report["rtts"]:
        runs = [r for r in report["latency"] if r["rtt"] == rtt and pair in r.get("wan_rtt", {})]
        if not runs:
            continue
        p50 = sorted(r["wan_rtt"][pair]["p50_ms"] for r in runs)[len(runs) // 2]
        p99 = max(r["wan_rtt"][pair]["p99_ms"] for r in runs)
        worst = max(r["wan_rtt"][pair]["max_ms"] for r in runs)
        cpu = max(r["delayer_cpu_per_second"] for r in runs)
        link = report["link"].get(str(rtt), {})
        rows.append(f"| {rtt} | {p50} / {p99} / {worst} ms | up to {cpu:.1%} | {link.get('mb_per_second', '-')} MB/s "
                    f"| {link.get('delayer_cpu_seconds_per_gb', '-')} s |")  # fmt: skip
    rows += ["", "| RTT | acks=all bulk, one producer | controller failover (model) | rolling restart: per node, gates "
             "| crossed/produced: record bytes, TCP payload (model) |", "|---|---|---|---|---|"]  # fmt: skip
    for rtt in report["rtts"]:
        b, f, rr = (report[k].get(str(rtt), {}) for k in ("bulk", "failover", "restart"))
        failover = f"{f['new_leader_after_ms']} ms ({f['model_ms']:.0f} ms, {f['ratio']})" if f else "-"
        rows.append(
            f"| {rtt} | {b.get('acked_mb_per_second', '-')} MB/s | {failover} | {rr.get('per_node_seconds', '-')} s, "
            f"{rr.get('gate_seconds', '-')} s | {rr.get('crossed_per_produced_records', '-')}, "
            f"{rr.get('crossed_per_produced', '-')} (2.0) |"
        )
    return "\n".join(rows)


def draw(report, path):
    import matplotlib  # noqa: PLC0415  only where the picture is drawn

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, len(report["rtts"]), figsize=(5 * len(report["rtts"]), 4), sharey=True)
    for ax, rtt in zip(axes, report["rtts"], strict=True):
        for r in report["latency"]:
            if r["rtt"] != rtt or r["rate"] != 1000:
                continue
            series = [(f"{r['case']} {r['settings_label']}", r["producer"]["steady_ms"])]
            if r["case"] == "a_local" and r["settings_label"] == "recommended":
                series += [(f"e2e {n}", r[n]["steady_ms"]) for n in ("far_dc_leader", "far_dc_follower")]
            for label, values in series:
                values = sorted(values)
                ax.plot(values, [(i + 1) / len(values) for i in range(len(values))], label=label)
        ax.set_title(f"RTT {rtt} ms, 1000 records/s")
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("fraction of records")
    axes[-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def failovers(bench, rtt, kills=FAILOVER_KILLS):
    """The active controller killed `kills` times in a row: each kill's figures and their median over every kill.

    A kill without a new leader measured, or after which the quorum did not
    catch up again, failed: it counts in the median as slower than any (the
    median is None when half or more failed) and is one of the problems.
    """
    runs = [bench.controller_failover(rtt) for _ in range(kills)]
    times = sorted((r["new_leader_after_ms"] for r in runs), key=lambda t: math.inf if t is None else t)
    median = times[len(times) // 2]
    failed = [r["killed"] for r in runs if r["new_leader_after_ms"] is None or not r["quorum_back"]]
    problems = [f"controller failover at RTT {rtt} ms: {len(failed)} of {kills} kills without a new leader "
                f"measured or the quorum back (killed {failed})"] if failed else []  # fmt: skip
    model = runs[0]["model_ms"]
    return {"runs": runs, "new_leader_after_ms": median, "model_ms": model, "ratio": wanmodel.ratio(median, model),
            "killed": [r["killed"] for r in runs], "failed_kills": len(failed), "problems": problems}  # fmt: skip


def save(report):
    """What was measured so far, so that a run cut short keeps its figures."""
    REPORT.parent.mkdir(exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=1) + "\n")


def calm_main(cluster, args):
    out = {}
    with tempfile.TemporaryDirectory() as workdir:
        bench = Bench(cluster, workdir, args.seconds, args.warmup)
        try:
            with dcnet.DcClient(bench.first) as near, dcnet.DcClient(bench.second) as far:
                bench.clients = {bench.first: near, bench.second: far}
                for rtt in args.rtt or [100]:
                    control.set_rtt(rtt)
                    time.sleep(10)
                    out[str(rtt)] = found = bench.calm(args.calm)
                    print(json.dumps({"rtt": rtt, **found}), flush=True)
        finally:
            control.apply(wan_inventory.read(cluster.inventory))
    path = REPORT.with_name("bench-wan-calm.json")
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(out, indent=1) + "\n")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m testkit.bench.wan", description=__doc__.splitlines()[0])
    p.add_argument("--rtt", type=float, action="append", help="a broker-DC round trip to measure (repeat)")
    p.add_argument("--seconds", type=float, default=20, help="steady-state seconds per run")
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--parts", default=",".join(PARTS), help=f"what to measure at each RTT, of {','.join(PARTS)}")
    p.add_argument(
        "--calm",
        type=float,
        metavar="SECONDS",
        help="only a calm period under load at each --rtt: elections, ISR shrinks, fenced brokers",
    )
    p.add_argument("--resume", action="store_true", help="keep the saved report's figures and measure only the rest")
    p.add_argument("--report", type=Path, help="only the model, the table and the picture of a saved report")
    args = p.parse_args(argv)
    if args.report:
        report = json.loads(args.report.read_text())
        finish(report, args.report)
        return 1 if report["problems"] else 0
    parts = set(args.parts.split(","))
    if parts - set(PARTS):
        p.error(f"--parts: unknown {','.join(sorted(parts - set(PARTS)))} (known: {','.join(PARTS)})")
    cluster = inventory.load()
    if args.calm:
        return calm_main(cluster, args)
    rtts = args.rtt or list(RTTS)
    report = {"rtts": rtts, "seconds": args.seconds, "warmup": args.warmup, "latency": [], "clients": [],
              "failover": {}, "restart": {}, "link": {}, "bulk": {}, "broker_dcs": list(cluster.dcs)}  # fmt: skip
    if args.resume and REPORT.exists():
        report = json.loads(REPORT.read_text())
        report["rtts"] = sorted(set(report["rtts"]) | set(rtts))
    with tempfile.TemporaryDirectory() as workdir:
        bench = Bench(cluster, workdir, args.seconds, args.warmup)
        report["replica_fetch_wait_max_ms"] = bench.broker_setting("replica.fetch.wait.max.ms")
        side_by_side = client_cases.Clients(bench)
        try:
            with dcnet.DcClient(bench.first) as near, dcnet.DcClient(bench.second) as far:
                bench.clients = {bench.first: near, bench.second: far}
                if "clients" in parts:
                    side_by_side.prepare()
                if parts & {"latency", "clients"} and "calibration" not in report:
                    print("RTT 0 ms: the model's calibration run", flush=True)
                    control.set_rtt(0)
                    time.sleep(10)
                    report["calibration"] = bench.calibrate()
                    save(report)
                for rtt in rtts:
                    print(f"RTT {rtt} ms between {bench.first} and {bench.second}", flush=True)
                    control.set_rtt(rtt)
                    time.sleep(10)
                    done = {r["rate"] for r in report["latency"] if r["rtt"] == rtt}
                    if "latency" in parts and not done & set(RATES):
                        report["latency"] += bench.latencies(rtt)
                        save(report)
                    if "clients" in parts:
                        done_cases = {client_cases.key(c) for c in report.setdefault("clients", [])}
                        for found in side_by_side.all_cases(rtt, done_cases):
                            report["clients"].append(found)
                            save(report)
                    if "quiet" in parts and QUIET_RATE not in done:
                        # A quiet leader: the far follower learns the high watermark late (replica.fetch.wait.max.ms).
                        report["latency"] += bench.latencies(rtt, rates=(QUIET_RATE,), only="a_local")
                        save(report)
                    if "bulk" in parts and str(rtt) not in report["bulk"]:
                        report["bulk"][str(rtt)] = bench.bulk(rtt)
                        print(f"  bulk acks=all: {report['bulk'][str(rtt)]}", flush=True)
                        save(report)
                    if "link" in parts and rtt and str(rtt) not in report["link"]:
                        report["link"][str(rtt)] = bench.link_throughput()
                        print(f"  link: {report['link'][str(rtt)]}", flush=True)
                        save(report)
                    if "failover" in parts and str(rtt) not in report["failover"]:
                        report["failover"][str(rtt)] = failovers(bench, rtt)
                        print(f"  controller failover: {report['failover'][str(rtt)]}", flush=True)
                        save(report)
                    if "restart" in parts and str(rtt) not in report["restart"]:
                        report["restart"][str(rtt)] = bench.rolling_restart(rtt)
                        print(f"  rolling restart: {report['restart'][str(rtt)]}", flush=True)
                        save(report)
        finally:
            if "clients" in parts:
                client_cases.delete_topics(cluster)
            control.apply(wan_inventory.read(cluster.inventory))
    save(report)  # the raw figures, before the model
    finish(report)
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
