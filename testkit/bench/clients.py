"""bench-wan's `clients` part: producers side by side over the WAN, and where each one's time goes.

For each round trip, each number of partitions a leader broker holds for the
producer (1, 2, 4), each rate (200 and 1000 records/s of 200 bytes) and each
place of the producer (`local`: in the DC of the partitions' leaders;
`remote`: in the other broker DC), three clients write acks=all, idempotent:

- `confluent-kafka`: one librdkafka producer with the settings docs/wan.md
  recommends (one request in flight per connection, linger.ms 5);
- `per-partition`: the project's testkit.producer.PerPartitionProducer, a
  librdkafka producer per partition, the same settings;
- `kafka-python`: the project's testkit.producer.KafkaPythonProducer
  (kafka-python's producer, which, as Java's does, puts every partition led
  by a broker into one request), the same settings;
- `java`: Kafka's own kafka-producer-perf-test (the Java producer, which puts
  every partition led by a broker into one request), the same settings,
  from the same DC;
- `spark-sink`: Spark's own Kafka sink (the Java producer in each executor),
  acks=all, the same settings, from a job on the DC's Spark cluster in
  continuous mode (testkit/bench/sparksink_job.py); its records' latency is
  their leader's append time (the bench topics stamp LogAppendTime) less
  their creation, for the cases with 2 partitions per leader.

Each case writes a topic made for it (`bench-wan-p<N>`: 2N partitions, all
led by the first broker DC's two brokers, N each, two replicas in each DC).
The `leader-local` cases (the Python clients, 2 partitions per leader) write
`bench-wan-ll-p2`, whose partitions are led by every broker of both DCs, 2
each, from a producer in the first DC that writes only those led in its own
DC, read again from the metadata each second (as the soak's and the
active/active jobs' producers do).
Its figures: the records' latency (p50, p99) and, per leader broker, where
the time went: librdkafka's statistics split it into the client queue
(`int_latency`), the wait for a request slot (`outbuf_latency`) and the
request's round trip (`rtt`); the Java producer reports its record queue
time and request latency per node; the brokers' request metrics split each
Produce into queue, local, remote (the far replicas' fetch) and response.
Beside each: the model's p50 and p99 (testkit.bench.wanmodel: one request
per connection at a time; one partition per request in librdkafka, every
partition of a broker in one request in Java), and measured/model.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from ansible_collections.stretch.kafka.plugins.module_utils import security
from kafka_smoke.submit import submit_command, submit_env
from testkit import REPO
from testkit.bench import wanmodel
from testkit.bench.wanclient import percentiles
from testkit.cluster import private_file, wait_until
from testkit.loadtest import harness

CLIENTS = ("confluent-kafka", "per-partition", "kafka-python", "java", "spark-sink")
# Spark's sink for one layout only: each of its cases is a Spark application (about a minute).
SPARK_PARTITIONS_PER_LEADER = 2
SPARK_JOB = Path(__file__).with_name("sparksink_job.py")
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"
PARTITIONS_PER_LEADER = (1, 2, 4)
RATES = (200, 1000)
PLACES = ("local", "remote", "leader-local")
# The leader-local cases: the layout of the targets, and only the clients that choose their partitions by leader.
LEADER_LOCAL_PER_LEADER = 2
LEADER_LOCAL_CLIENTS = ("confluent-kafka", "per-partition", "kafka-python")
SIZE = 200
SETTINGS = {"max.in.flight.requests.per.connection": "1", "linger.ms": "5"}
PERF_TEST = "org.apache.kafka.tools.ProducerPerformance"


def topic_name(per_leader, place="local"):
    return f"bench-wan-ll-p{per_leader}" if place == "leader-local" else f"bench-wan-p{per_leader}"


def topic_layouts(leaders, followers):
    """{topic: {partition: replicas}} of every bench topic."""
    out = {topic_name(n): assignments(leaders, followers, n) for n in PARTITIONS_PER_LEADER}
    out[topic_name(LEADER_LOCAL_PER_LEADER, "leader-local")] = spread(leaders, followers, LEADER_LOCAL_PER_LEADER)
    return out


def assignments(leaders, followers, per_leader):
    """{partition: replicas} of a bench topic: per_leader partitions led by each of the leader DC's brokers, the
    other of them next, then both brokers of the other DC (two replicas in each DC)."""
    out = {}
    for i in range(per_leader * len(leaders)):
        leader = leaders[i % len(leaders)]
        out[i] = [leader, *[b for b in leaders if b != leader], *followers]
    return out


def spread(leaders, followers, per_leader):
    """{partition: replicas} of the leader-local topic: per_leader partitions led by each broker of both DCs, in
    turn, each with its DC neighbour next and the other DC's brokers after (two replicas in each DC)."""
    first, second = assignments(leaders, followers, per_leader), assignments(followers, leaders, per_leader)
    return {i: (first if i % 2 == 0 else second)[i // 2] for i in range(len(first) + len(second))}


def make_topics(cluster, leaders, followers):
    """The bench topics, made anew with their explicit replicas."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)
    try:
        layouts = topic_layouts(leaders, followers)
        names = list(layouts)
        stale = [n for n in names if n in admin.list_topics()]
        if stale:
            admin.delete_topics(stale)
            wait_until(lambda: not set(stale) & set(admin.list_topics()), timeout=120, interval=1)
        admin.create_topics([NewTopic(name, replica_assignments=layout,
                                      topic_configs={"retention.ms": "3600000",
                                                     "message.timestamp.type": "LogAppendTime"})
                             for name, layout in layouts.items()])  # fmt: skip
        wait_until(lambda: set(names) <= set(admin.list_topics()), timeout=120, interval=1)
    finally:
        admin.close()


def delete_topics(cluster):
    admin = KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)
    try:
        names = [*(topic_name(n) for n in PARTITIONS_PER_LEADER), topic_name(LEADER_LOCAL_PER_LEADER, "leader-local")]
        admin.delete_topics([t for t in names if t in admin.list_topics()])
    finally:
        admin.close()


def java_home():
    """The Kafka release's jars on this machine (the testbed's archive, unpacked once beside it)."""
    archive = sorted((REPO / "testbed/dist").glob("kafka_2.13-*.tgz"))[-1]
    home = archive.with_suffix("")
    if not (home / "libs").is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(home.parent, filter="data")
    return home


def java_settings(config):
    """A Java client's settings (security.java) from librdkafka settings."""
    client = {"protocol": config["security.protocol"], "ca": config.get("ssl.ca.location"),
              "mechanism": config.get("sasl.mechanism"), "username": config.get("sasl.username"),
              "password": config.get("sasl.password")}  # fmt: skip
    return security.java({k: v for k, v in client.items() if v is not None})


def java_properties(config, directory):
    """A Java client's properties file (mode 0600: it holds the password) from librdkafka settings."""
    text = "".join(f"{k}={v}\n" for k, v in sorted(java_settings(config).items()))
    return private_file(directory / "java-producer.properties", text)


def executor_settings(config, directory):
    """The Spark sink's Kafka settings as JSON (mode 0600): the Java client's, the CA's certificates inline (the
    executors run on the DC's Spark hosts, where this machine's file is not)."""
    settings = java_settings(config)
    ca = settings.pop("ssl.truststore.location", None)
    if ca:
        settings["ssl.truststore.certificates"] = Path(ca).read_text()
    return private_file(directory / "spark-sink-kafka.json", json.dumps(settings))


def append_latencies(config, topic, start, warmup_s):
    """The steady state's latencies (ms) of the records written since start ({partition: offset}): each record's
    leader append time (LogAppendTime) less the creation time its value holds (microseconds), from the records
    made after the first warmup_s seconds."""
    ends = harness.end_offsets(config, topic, sorted(start))
    consumer = Consumer({**config, "group.id": "bench-wan-spark-sink", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, start[p]) for p in sorted(start)])
    rows, deadline = [], time.monotonic() + 300
    try:
        left = {p for p in start if ends[p] > start[p]}
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is None:
                    rows.append((int(msg.value()) / 1000, msg.timestamp()[1]))
                    if msg.offset() + 1 >= ends[msg.partition()]:
                        left.discard(msg.partition())
    finally:
        consumer.close()
    if not rows:
        return {"n": 0}
    steady_from = min(made for made, _ in rows) + warmup_s * 1000
    return percentiles([appended - made for made, appended in rows if made >= steady_from])


PERCENTILES = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?([\d.]+) ms avg latency, ([\d.]+) ms max latency, "
    r"(\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99.9th"
)
# --print-metrics: "group:name:{tag=value, ...} : value", the tags in no set order.
METRIC = re.compile(r"^(producer-node-metrics|producer-metrics):([\w-]+):\{([^}]*)\}\s*:\s*(\S+)", re.MULTILINE)
NODE_METRICS = ("request-latency-avg", "request-latency-max")
QUEUE_METRICS = ("record-queue-time-avg", "record-queue-time-max")


def parse_perf_test(out):
    """The Java producer's figures from kafka-producer-perf-test's output: the last summary line (the steady
    state's, after its warm-up records) and, from --print-metrics, its record queue time and each node's request
    latency."""
    summaries = PERCENTILES.findall(out)
    if not summaries:
        raise RuntimeError(f"kafka-producer-perf-test printed no summary: {out[-1500:]}")
    n, rate, avg, worst, p50, _p95, p99, _p999 = summaries[-1]
    nodes, queue = {}, {}
    for group, name, tags, value in METRIC.findall(out):
        number = None if value in ("NaN", "-Infinity", "Infinity") else round(float(value), 2)
        tag = dict(t.strip().split("=", 1) for t in tags.split(",") if "=" in t)
        if (
            group == "producer-node-metrics"
            and name in NODE_METRICS
            and re.fullmatch(r"node-\d+", tag.get("node-id", ""))
        ):
            nodes.setdefault(tag["node-id"].removeprefix("node-"), {})[name.replace("-", "_")] = number
        elif group == "producer-metrics" and name in QUEUE_METRICS:
            queue[name.replace("-", "_")] = number
    return {"records": int(n), "records_per_second": float(rate), "p50_ms": float(p50), "p99_ms": float(p99),
            "avg_ms": float(avg), "max_ms": float(worst), "nodes": nodes, **queue}  # fmt: skip


def model(case, lan_produce_ms, fetch_wait_ms=500):
    """The model's p50 and p99 for a case (wanmodel), or None without the LAN's Produce time, or for Spark's sink,
    whose figure (to its leader's append) is not an acknowledgement's."""
    if lan_produce_ms is None or case["client"] == "spark-sink":
        return None
    _, service = wanmodel.service_ms(case["rtt_ms"], lan_produce_ms, fetch_wait_ms, case["leader_dc"] == "remote")
    # librdkafka: one partition per request, so a broker's partitions take turns on its connection; the Java
    # producer and kafka-python carry them all in one request; the per-partition producer gives each its own
    # connection.
    turns = case["partitions_per_leader"] if case["client"] == "confluent-kafka" else 1
    per_partition = case["rate"] / (case["partitions_per_leader"] * case["leaders"])
    return wanmodel.producer_ms(service, float(SETTINGS["linger.ms"]), turns, per_partition)


class Clients:
    """The part's runs, through bench-wan's Bench (its clients placed in the DCs, its broker metrics)."""

    def __init__(self, bench):
        self.bench = bench
        cluster = bench.cluster
        self.leaders = sorted(b.node_id for b in cluster.brokers if b.dc == bench.first)
        self.followers = sorted(b.node_id for b in cluster.brokers if b.dc == bench.second)
        self.java_config = None

    def prepare(self):
        make_topics(self.bench.cluster, self.leaders, self.followers)
        self.java_config = java_properties(self.bench.config, self.bench.workdir)

    def run_python(self, client, dc, topic, rate, target="--all"):
        args = [target, "--client", client, "--rate", str(rate), "--size", str(SIZE)]
        args += [a for k, v in SETTINGS.items() for a in ("--set", f"{k}={v}")]
        found = self.bench.answer(self.bench.client(dc, "produce", *args, topic=topic),
                                  self.bench.seconds + self.bench.warmup + 180)  # fmt: skip
        steady = found["steady"]
        breakdown = found["breakdown"]
        metrics = found.get("client_metrics") or {}
        if metrics:  # kafka-python: its own metrics, as the Java producer's
            breakdown = {node: figures for node, figures in metrics["nodes"].items() if int(node) in self.leaders}
        return {
            "p50_ms": steady.get("p50"), "p99_ms": steady.get("p99"), "records": steady["n"],
            "errors": found["errors"], "unconfirmed": found["unconfirmed"],
            "int_latency_p99_ms": max((b["int_latency"]["p99"] for b in breakdown.values() if "int_latency" in b),
                                      default=None),
            "outbuf_latency_p99_ms": max((b["outbuf_latency"]["p99"] for b in breakdown.values()
                                          if "outbuf_latency" in b), default=None),
            "rtt_p99_ms": max((b["rtt"]["p99"] for b in breakdown.values() if "rtt" in b), default=None),
            "record_queue_time_avg_ms": metrics.get("record_queue_time_avg_ms"),
            "record_queue_time_max_ms": metrics.get("record_queue_time_max_ms"),
            "client_breakdown": breakdown,
        }  # fmt: skip

    def run_java(self, dc, topic, rate):
        records = int(rate * (self.bench.seconds + self.bench.warmup))
        warmup = int(rate * self.bench.warmup)
        props = ["acks=all", "enable.idempotence=true", *[f"{k}={v}" for k, v in SETTINGS.items()],
                 f"bootstrap.servers={self.bench.cluster.bootstrap_servers}"]  # fmt: skip
        home = java_home()
        cmd = ["java", "-Xmx256m", "-cp", f"{home}/libs/*", PERF_TEST, "--topic", topic, "--num-records",
               str(records), "--record-size", str(SIZE), "--throughput", str(rate), "--warmup-records", str(warmup),
               "--producer.config", str(self.java_config), "--print-metrics", "--producer-props", *props]  # fmt: skip
        proc = subprocess.run(self.bench.clients[dc].wrap(cmd), capture_output=True, text=True,
                              timeout=self.bench.seconds + self.bench.warmup + 180, check=False)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"kafka-producer-perf-test failed ({proc.returncode}): {proc.stderr[-2000:]}")
        found = parse_perf_test(proc.stdout)
        return {
            "p50_ms": found["p50_ms"], "p99_ms": found["p99_ms"], "records": found["records"] - warmup,
            "errors": 0, "unconfirmed": 0, "int_latency_p99_ms": None, "outbuf_latency_p99_ms": None,
            "rtt_p99_ms": None, "record_queue_time_avg_ms": found.get("record_queue_time_avg"),
            "record_queue_time_max_ms": found.get("record_queue_time_max"),
            "client_breakdown": {node: {"request_latency_avg": v.get("request_latency_avg"),
                                        "request_latency_max": v.get("request_latency_max")}
                                 for node, v in found["nodes"].items() if int(node) in self.leaders},
        }  # fmt: skip

    def run_spark(self, dc, topic, rate, per_leader):
        cluster, seconds = self.bench.cluster, self.bench.seconds + self.bench.warmup
        start = harness.end_offsets(self.bench.config, topic, list(range(per_leader * len(self.leaders))))
        props = cluster.spark_properties_file(self.bench.workdir, dc)
        confs = [f"spark.driver.host={cluster.spark[dc]['driver_host']}", "spark.cores.max=2",
                 "spark.executor.memory=512m"]  # fmt: skip
        cmd = submit_command(str(SPARK_SUBMIT), cluster.spark[dc]["master"], "bench-wan-spark-sink",
                             str(REPO / "testbed/dist/spark-jars"), confs, props)  # fmt: skip
        cmd += [str(SPARK_JOB), cluster.bootstrap_servers, topic, str(rate), "2", str(seconds),
                str(executor_settings(self.bench.config, self.bench.workdir))]  # fmt: skip
        proc = subprocess.run(cmd, env=submit_env(), capture_output=True, text=True, timeout=seconds + 300,
                              check=False)  # fmt: skip
        if proc.returncode != 0:
            raise RuntimeError(f"the Spark sink's job failed ({proc.returncode}): {proc.stderr[-2000:]}")
        steady = append_latencies(self.bench.config, topic, start, self.bench.warmup)
        return {"p50_ms": steady.get("p50"), "p99_ms": steady.get("p99"), "records": steady["n"], "errors": 0,
                "unconfirmed": 0, "int_latency_p99_ms": None, "outbuf_latency_p99_ms": None, "rtt_p99_ms": None,
                "latency_measured": "leader append time less creation", "client_breakdown": {}}  # fmt: skip

    def case(self, rtt, client, per_leader, rate, place):
        dc = self.bench.second if place == "remote" else self.bench.first
        topic = topic_name(per_leader, place)
        before = self.bench.scrape(self.bench.cluster.brokers)
        started = time.monotonic()
        if client == "java":
            found = self.run_java(dc, topic, rate)
        elif client == "spark-sink":
            found = self.run_spark(dc, topic, rate, per_leader)
        else:
            found = self.run_python(client, dc, topic, rate, "--leader-local" if place == "leader-local" else "--all")
        after = self.bench.scrape(self.bench.cluster.brokers)
        split = self.bench.produce_split(before, after)
        return {
            "client": client, "rtt_ms": rtt, "rate": rate, "partitions_per_leader": per_leader, "leader_dc": place,
            "settings": dict(SETTINGS), "leaders": len(self.leaders), "seconds": round(time.monotonic() - started, 1),
            **found, "brokers": {b: v for b, v in split.items() if int(b) in self.leaders},
        }  # fmt: skip

    def all_cases(self, rtt, done=()):
        """Each case of the round trip not done yet, as it ends."""
        for per_leader in PARTITIONS_PER_LEADER:
            for rate in RATES:
                for place in PLACES:
                    for client in CLIENTS:
                        key = (rtt, client, per_leader, rate, place)
                        if key in done or not measured(client, per_leader, place):
                            continue
                        found = self.case(rtt, client, per_leader, rate, place)
                        print(f"  {json.dumps({k: found[k] for k in SUMMARY})}", flush=True)
                        yield found


def measured(client, per_leader, place):
    """Whether the clients part measures this client with this layout and place."""
    if place == "leader-local":
        return client in LEADER_LOCAL_CLIENTS and per_leader == LEADER_LOCAL_PER_LEADER
    return client != "spark-sink" or per_leader == SPARK_PARTITIONS_PER_LEADER


SUMMARY = ("client", "rtt_ms", "rate", "partitions_per_leader", "leader_dc", "p50_ms", "p99_ms",
           "int_latency_p99_ms", "rtt_p99_ms", "records")  # fmt: skip


def key(case):
    return (case["rtt_ms"], case["client"], case["partitions_per_leader"], case["rate"], case["leader_dc"])


def with_model(cases, lan_produce_ms, fetch_wait_ms):
    """Each case with the model's p50 and p99 and measured/model beside them; lan_produce_ms: the leader's own
    Produce time from bench-wan's calibration run at RTT 0 (None: no model); fetch_wait_ms: the brokers'
    replica.fetch.wait.max.ms."""
    for case in cases:
        case["model"] = model(case, lan_produce_ms, fetch_wait_ms)
        m = case["model"] or {}
        case["measured_over_model"] = {q: wanmodel.ratio(case[f"{q}_ms"], m.get(q)) for q in ("p50", "p99")}


def table(cases):
    """The side-by-side table, in round trips of the WAN too, with the breakdown's p99s."""
    rows = ["| RTT | rate | per leader | producer in | client | p50 / p99 ms | in RTTs | client queue p99 | "
            "slot wait p99 | request rtt p99 | leader's Produce: queue / local / remote / response | model p50 / p99 "
            "| measured/model |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for c in sorted(cases, key=lambda c: (c["rtt_ms"], c["rate"], c["partitions_per_leader"], c["leader_dc"],
                                          CLIENTS.index(c["client"]))):  # fmt: skip
        rtt = c["rtt_ms"]
        in_rtts = f"{c['p50_ms'] / rtt:.1f} / {c['p99_ms'] / rtt:.1f}" if rtt and c["p50_ms"] is not None else "-"
        brokers = [b for b in c["brokers"].values() if b.get("requests")]
        split = " / ".join(
            f"{sum(b[f'{k}_ms'] or 0 for b in brokers) / len(brokers):.1f}" for k in ("queue", "local", "remote",
                                                                                       "response")
        ) if brokers else "-"  # fmt: skip
        m = c.get("model") or {}
        r = c.get("measured_over_model") or {}
        rows.append(f"| {rtt} | {c['rate']} | {c['partitions_per_leader']} | {c['leader_dc']} | {c['client']} | "
                    f"{c['p50_ms']} / {c['p99_ms']} | {in_rtts} | {c['int_latency_p99_ms'] or '-'} | "
                    f"{c['outbuf_latency_p99_ms'] or '-'} | {c['rtt_p99_ms'] or '-'} | {split} | "
                    f"{m.get('p50', 0):.0f} / {m.get('p99', 0):.0f} | {r.get('p50')} / {r.get('p99')} |")  # fmt: skip
    return "\n".join(rows)
