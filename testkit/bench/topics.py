"""Figures for topics and quotas as code: placement time and spread, replicas and bytes moved, no-op reconcile time.

Run with `make bench-topics` against the running testbed (`make up converge`).
Prints the figures and writes reports/bench-topics.json. It creates 200 topics,
50 quotas and one topic with Kafka's own placement, and removes them at the end.
The machine is noisy: compare ratios measured in one run.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request

from confluent_kafka import Producer

from ansible_collections.stretch.kafka.plugins.module_utils import nodes, placement, quotas, topics
from testkit import cluster as inventory
from testkit.bench import bounds
from testkit.playbook import REPO, run

CLUSTER = inventory.load()
BOOTSTRAP = CLUSTER.bootstrap_servers
BROKERS = nodes.by_dc(nodes.with_role(CLUSTER.records, "broker"))
REPLICATION_BYTES_OUT = "kafka_server_brokertopicmetrics_replicationbytesout_total"
TOPICS = [{"name": f"bench-{i:03d}", "partitions": 2, "configs": {"retention.ms": 3600000 + i}} for i in range(200)]
QUOTAS = [
    {"entity": {"client-id": f"bench-{i:02d}"}, "quotas": {"producer_byte_rate": 1048576 + i, "request_percentage": 50}}
    for i in range(50)
]
LEGACY = "bench-legacy"


def playbook(name, **extra):
    result = run(CLUSTER.inventory, name, log_dir=REPO / "reports" / "bench-topics", **extra)
    if not result.ok:
        raise SystemExit(f"{name}.yml failed; see {result.log}")
    return result.seconds, result.changed


def placement_figures():
    big = {"dc1": list(range(100, 104)), "dc2": list(range(200, 204))}
    start = time.monotonic()
    before = placement.place(big, 4, 10_000)
    fresh_seconds = time.monotonic() - start
    grown = {"dc1": [*big["dc1"], 104], "dc2": big["dc2"]}
    start = time.monotonic()
    after = placement.place(grown, 4, 10_000, current=before, balance=True)
    repair_seconds = time.monotonic() - start
    assert not placement.violations(after, grown)
    overlap_only = placement._matched(grown, 4, 10_000, before, None)  # noqa: SLF001  the previous method, for comparison
    return {
        "place_10000_partitions_seconds": round(fresh_seconds, 3),
        "rebalance_10000_partitions_after_adding_a_broker_seconds": round(repair_seconds, 3),
        "replicas_moved_adding_a_broker": placement.moved_replicas(before, after),
        # From the rules alone, not from the algorithm's output (testkit/bench/bounds.py, held to a brute-force
        # minimum in tests/unit/test_bench_bounds.py): what any placement that evens each DC's replicas copies.
        "replicas_moved_adding_a_broker_minimum": bounds.lower_bound_moves(before, grown),
        "replicas_even_after_adding_a_broker": bounds.replicas_even(after, grown),
        "replicas_moved_adding_a_broker_by_overlap_matching_only": placement.moved_replicas(before, overlap_only),
    }


def partition_bytes(admin, topic):
    """{(broker, partition): bytes} of topic's replicas, from the brokers' log dirs."""
    sizes = {}
    for reply in admin.client.describe_log_dirs([topic]):
        for log_dir in reply["log_dirs"]:
            for t in log_dir["topics"]:
                for p in t["partitions"]:
                    sizes[(reply["broker"], p["partition_index"])] = p["partition_size"]
    return sizes


def replication_bytes_out():
    """{broker: bytes it has sent to follower replicas}, from each broker's own counter (JMX exporter)."""
    out = {}
    for node in CLUSTER.brokers:
        text = (
            urllib.request.urlopen(f"http://{node.address}:{CLUSTER.metrics_port}/metrics", timeout=10).read().decode()
        )
        found = re.search(
            r"^kafka_server_brokertopicmetrics_replicationbytesout_total(?:\{\})? ([0-9.eE+-]+)$", text, re.M
        )
        if not found:
            raise SystemExit(f"bench: broker {node.node_id} exports no {REPLICATION_BYTES_OUT}")
        out[node.node_id] = float(found.group(1))
    return out


def spread(admin):
    """Per broker, the preferred leaders and replicas it holds over every topic, and their max - min."""
    load = placement.cluster_load(t["partitions"] for t in admin.topics().values())
    every = [n.node_id for n in CLUSTER.brokers]
    leaders = {b: load["leaders"][b] for b in every}
    replicas = {b: load["replicas"][b] for b in every}
    return {
        "leaders_per_broker": leaders,
        "replicas_per_broker": replicas,
        "leaders_spread": max(leaders.values()) - min(leaders.values()),
        "replicas_spread": max(replicas.values()) - min(replicas.values()),
    }


def reassignment_figures(admin):
    admin.client.create_topics({LEGACY: {"num_partitions": 4, "replication_factor": 3}})
    time.sleep(2)
    producer = Producer({"bootstrap.servers": BOOTSTRAP, "acks": "all", "linger.ms": 20, **CLUSTER.client_config})
    for i in range(20_000):
        producer.produce(LEGACY, value=bytes(1024), key=str(i).encode())
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    time.sleep(5)  # followers caught up: the counters below move only for the reassignment's copies
    on_disk = partition_bytes(admin, LEGACY)
    layout = admin.topics()[LEGACY]["partitions"]
    per_partition = {p: max(size for (_, q), size in on_disk.items() if q == p) for p in layout}
    counters_before = replication_bytes_out()
    declared = [*TOPICS, {"name": LEGACY, "partitions": 4}]
    seconds, _ = playbook("topics", kafka_topics=declared, kafka_admin_replication_throttle_rate=4 * 1048576)
    counters_after = replication_bytes_out()
    target = admin.topics()[LEGACY]["partitions"]
    moved = placement.moved_replicas(layout, target)
    # Each new replica needs one copy of its partition's log. The minimum comes
    # from the layout before and the replication factor asked for, not from
    # where the algorithm put the replicas: going from len(replicas) to 4, a
    # partition gains at least the difference. What was copied comes from the
    # leaders' own byte counters.
    minimum = sum(per_partition[p] * bounds.new_replicas_at_least(layout[p], 4) for p in layout)
    copied = sum(counters_after[b] - counters_before.get(b, 0.0) for b in counters_after)
    return {
        "reassignment_rf3_to_rf4_seconds_at_4_MiB_per_s": round(seconds, 1),
        "reassignment_replicas_moved": moved,
        "reassignment_bytes_copied_by_the_brokers_counters": int(copied),
        "reassignment_bytes_minimum_from_the_logs": minimum,
        "reassignment_copied_to_minimum_ratio": round(copied / minimum, 3) if minimum else None,
        "placement_violations_after": placement.violations(target, BROKERS),
    }


def noop_in_process(admin):
    """Reading the cluster and planning, without Ansible: what one module run spends talking to Kafka."""
    start = time.monotonic()
    current = admin.topics()
    declared = topics.normalize(TOPICS, 4)
    configs = admin.topic_configs(n for n in current if n in declared)
    for name, values in configs.items():
        current[name]["configs"] = values
    topic_plan = topics.plan(declared, current, BROKERS)
    quota_plan = quotas.plan(quotas.normalize(QUOTAS), admin.quotas())
    seconds = time.monotonic() - start
    assert topics.is_empty(topic_plan), topics.summary(topic_plan, current)
    assert not quota_plan, quota_plan
    return seconds


def cleanup(admin):
    names = [n for n in admin.topics() if n.startswith("bench-")]
    if names:
        admin.delete_topics(names)
    bench = {k: v for k, v in admin.quotas().items() if any(str(n).startswith("bench-") for _, n in k)}
    admin.alter_quotas({k: {"set": {}, "delete": sorted(v)} for k, v in bench.items()})


def main():
    figures = placement_figures()
    admin = CLUSTER.admin()
    try:
        cleanup(admin)
        time.sleep(2)
        extra = {"kafka_topics": TOPICS, "kafka_quotas": QUOTAS}
        create_topics, changed = playbook("topics", **extra)
        create_quotas, _ = playbook("quotas", **extra)
        figures["create_200_topics_playbook_seconds"] = round(create_topics, 1)
        figures["after_creating_200_topics"] = spread(admin)
        figures["create_50_quotas_playbook_seconds"] = round(create_quotas, 1)
        time.sleep(2)
        noop_topics, changed_topics = playbook("topics", **extra)
        noop_quotas, changed_quotas = playbook("quotas", **extra)
        figures["noop_200_topics_playbook_seconds"] = round(noop_topics, 1)
        figures["noop_50_quotas_playbook_seconds"] = round(noop_quotas, 1)
        figures["noop_changed"] = changed_topics + changed_quotas
        preflight, _ = playbook("preflight")
        figures["preflight_playbook_seconds"] = round(preflight, 1)
        figures["noop_read_and_plan_in_process_seconds"] = round(noop_in_process(admin), 3)
        figures.update(reassignment_figures(admin))
    finally:
        cleanup(admin)
        admin.close()
    out = REPO / "reports" / "bench-topics.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(figures, indent=2) + "\n")
    for key, value in figures.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
