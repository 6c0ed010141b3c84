"""One replication stream's throughput over the WAN, with Linux's default TCP buffers and with kafka_node's.

Run with `make bench-kernel` against the running testbed (`make up converge`).
A follower broker fetches from a leader over one connection (one fetcher
thread per source broker): each fetch brings at most
replica.fetch.response.max.bytes, and the leader can have no more unacked
bytes in flight than its socket's send buffer, which the kernel never grows
past net.ipv4.tcp_wmem's maximum (Linux: 4 MiB). At 100 ms that is 42 MB/s
whatever the link; kafka_node sizes the maxima to twice the link's
bandwidth-delay product (plugins/module_utils/kernel.py).

For each RTT (30 and 100 ms, set on the testbed's WAN) and each setting
(Linux's defaults first, then the role's: a socket's buffer only grows, so
the defaults are measured before any connection grew past them), the
brokers' network namespaces are given the setting (testkit/nodekernel.py),
a topic of PARTITIONS partitions is written on one dc1 broker alone, and
then reassigned to that broker and one dc2 broker: the time until the dc2
follower is in sync for every partition gives the stream's throughput. The
host's routed bytes from dc1 to dc2 over the same window are the
independent measure of the same thing; the two must agree within 10%.
Prints the figures and writes reports/bench-kernel.json and
docs/images/kernel-buffers.png; puts the inventory's WAN and the role's
settings back at the end.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

from confluent_kafka import Producer
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic

from ansible_collections.stretch.kafka.plugins.module_utils import kernel
from testkit import REPO, dcnet, nodekernel
from testkit import cluster as inventory
from testkit.wan import control
from testkit.wan import inventory as wan_inventory

TOPIC = "kernel-bench"
PARTITIONS = 16
RECORD = 64 * 1024
# Bytes per run: enough that the catch-up lasts several seconds at the link's cap.
BYTES = 480 * 2**20
RTTS = (30, 100)
REPEATS = 2
LINUX_DEFAULTS = {
    "net.ipv4.tcp_rmem": f"4096 131072 {kernel.LINUX_RMEM_MAX}",
    "net.ipv4.tcp_wmem": f"4096 16384 {kernel.LINUX_WMEM_MAX}",
    "net.ipv4.tcp_slow_start_after_idle": "1",
}


def admin_client(cluster):
    return KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)


def write_on_leader(cluster, admin, leader):
    """The topic made anew with every partition on leader alone, filled with BYTES; its partitions."""
    admin.delete_topics([TOPIC]) if TOPIC in admin.list_topics() else None
    inventory.wait_until(lambda: TOPIC not in admin.list_topics(), timeout=60, interval=1)
    admin.create_topics(
        [
            NewTopic(
                TOPIC,
                replica_assignments={p: [leader] for p in range(PARTITIONS)},
                topic_configs={"min.insync.replicas": "1", "retention.ms": "3600000"},
            )
        ]  # fmt: skip
    )
    inventory.wait_until(lambda: TOPIC in admin.list_topics(), timeout=60, interval=1)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config, "acks": "1",
                         "linger.ms": 20, "compression.type": "none",
                         "batch.size": 1 << 20, "queue.buffering.max.kbytes": 1 << 20})  # fmt: skip
    value, failed = b"k" * RECORD, []
    deadline = time.monotonic() + 600
    for i in range(BYTES // RECORD):
        while True:
            try:
                producer.produce(TOPIC, value, partition=i % PARTITIONS,
                                 on_delivery=lambda err, _m: err and failed.append(err.str()))  # fmt: skip
                break
            except BufferError:
                producer.poll(0.1)
            if time.monotonic() > deadline:
                raise RuntimeError("the bench topic could not be written in 600 s")
    if producer.flush(300) or failed:
        raise RuntimeError(f"writing the bench topic failed: {failed[:3]}")


def in_sync(admin, follower):
    """Whether follower is in the ISR of every partition of the topic; a partial reply is not in sync."""
    described = admin.describe_topics([TOPIC])
    partitions = described[0]["partitions"] if described else []
    return len(partitions) == PARTITIONS and all(follower in p["isr_nodes"] for p in partitions)


def catch_up(cluster, admin, leader, follower, routed):
    """Seconds from the reassignment to a follower in sync everywhere, and the bytes routed dc1 -> dc2 meanwhile."""
    first, second = sorted(cluster.dcs)[:2]
    before = routed.read()
    started = time.monotonic()
    admin.alter_partition_reassignments({TopicPartition(TOPIC, p): [leader, follower] for p in range(PARTITIONS)})
    deadline = started + 900
    while not in_sync(admin, follower):
        if time.monotonic() > deadline:
            raise RuntimeError(f"broker {follower} not in sync after 900 s")
        time.sleep(0.05)
    seconds = time.monotonic() - started
    after = routed.read()
    return seconds, after[(first, second)][0] - before[(first, second)][0]


def model_mb_per_s(settings, rtt_ms, link_mb_per_s):
    """What one connection can carry: the leader's send buffer (its maximum, of which the kernel keeps half
    for data at the default tcp_adv_win_scale) per round trip, at most the link's own rate."""
    wmem_max = int(settings["net.ipv4.tcp_wmem"].split()[2])
    return min(link_mb_per_s, wmem_max / 2 / (rtt_ms / 1e3) / 1e6)


def run():
    cluster = inventory.load()
    containers = [node.host for node in cluster.nodes]
    sized = nodekernel.namespaced(kernel.settings(cluster.model["wan_link"]))
    first, second = sorted(cluster.dcs)[:2]
    leaders = [b.node_id for b in cluster.brokers if b.dc == first]
    followers = [b.node_id for b in cluster.brokers if b.dc == second]
    ports = {cluster.replication_port}
    results, admin = [], admin_client(cluster)
    try:
        with dcnet.RoutedBytes(cluster.dcs, ports) as routed:
            for label, settings in (("linux defaults", LINUX_DEFAULTS), ("kafka_node", sized)):
                nodekernel.apply(containers, settings)
                for rtt in RTTS:
                    control.set_rtt(rtt)
                    for repeat in range(REPEATS):
                        leader, follower = leaders[repeat % len(leaders)], followers[repeat % len(followers)]
                        write_on_leader(cluster, admin, leader)
                        seconds, wire = catch_up(cluster, admin, leader, follower, routed)
                        results.append({"settings": label, "rtt_ms": rtt, "leader": leader, "follower": follower,
                                        "seconds": round(seconds, 2), "bytes_written": BYTES, "bytes_routed": wire,
                                        "mb_per_s": round(BYTES / seconds / 1e6, 1),
                                        "routed_mb_per_s": round(wire / seconds / 1e6, 1)})  # fmt: skip
                        print(json.dumps(results[-1]), flush=True)
    finally:
        admin.delete_topics([TOPIC]) if TOPIC in admin.list_topics() else None
        admin.close()
        nodekernel.apply(containers, sized)
        control.apply(wan_inventory.read([cluster.inventory]))
    return summarize(results, sized)


def summarize(results, sized):
    """The median per (settings, RTT), the sized/default ratio per RTT, and the checks."""
    cells = {}
    for r in results:
        cells.setdefault((r["settings"], r["rtt_ms"]), []).append(r)
    table = []
    problems = []
    for (label, rtt), runs in sorted(cells.items()):
        measured = statistics.median(r["mb_per_s"] for r in runs)
        routed = statistics.median(r["routed_mb_per_s"] for r in runs)
        if abs(routed - measured) > 0.1 * measured:
            problems.append(f"{label} at {rtt} ms: {measured} MB/s by the follower's catch-up, {routed} MB/s routed")
        table.append({"settings": label, "rtt_ms": rtt, "mb_per_s": measured, "routed_mb_per_s": routed,
                      "runs": len(runs)})  # fmt: skip
    by = {(row["settings"], row["rtt_ms"]): row["mb_per_s"] for row in table}
    ratios = {rtt: round(by[("kafka_node", rtt)] / by[("linux defaults", rtt)], 2) for rtt in RTTS}
    link = max(by.values())
    for row in table:
        settings = LINUX_DEFAULTS if row["settings"] == "linux defaults" else sized
        row["model_mb_per_s"] = round(model_mb_per_s(settings, row["rtt_ms"], link), 1)
        row["measured_over_model"] = round(row["mb_per_s"] / row["model_mb_per_s"], 2)
    return {"ok": not problems, "problems": problems, "table": table, "ratio_sized_over_defaults": ratios,
            "runs": results, "link_cap_mb_per_s": link}  # fmt: skip


def draw(report, path):
    import matplotlib  # noqa: PLC0415  only the picture needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.35
    for i, label in enumerate(("linux defaults", "kafka_node")):
        rows = [r for r in report["table"] if r["settings"] == label]
        xs = [RTTS.index(r["rtt_ms"]) + (i - 0.5) * width for r in rows]
        bars = ax.bar(xs, [r["mb_per_s"] for r in rows], width,
                      label=f"{label} (tcp_wmem max {'4 MiB' if i == 0 else '72 MiB'})")  # fmt: skip
        ax.bar_label(bars, fmt="%.0f")
    ax.set_xticks(range(len(RTTS)), [f"{rtt} ms RTT" for rtt in RTTS])
    ax.set_ylabel("one replication stream, MB/s")
    ax.set_title("A dc2 follower catching up from a dc1 leader over the testbed's WAN")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    report = run()
    (REPO / "reports").mkdir(exist_ok=True)
    (REPO / "reports" / "bench-kernel.json").write_text(json.dumps(report, indent=1) + "\n")
    draw(report, REPO / "docs" / "images" / "kernel-buffers.png")
    for r in report["table"]:
        print(f"{r['settings']:<15} {r['rtt_ms']:>4} ms  {r['mb_per_s']:>6} MB/s (routed {r['routed_mb_per_s']}, "
              f"model {r['model_mb_per_s']}, ratio {r['measured_over_model']})")  # fmt: skip
    print(f"sized/defaults: {report['ratio_sized_over_defaults']}; problems: {report['problems'] or 'none'}")
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
