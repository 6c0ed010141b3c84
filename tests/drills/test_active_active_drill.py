"""The active/active streaming drill: `make drill-active-active` (the full one, a to e, 10 calm minutes);
the short one (a, b, c and e, 1 calm minute) runs in `make test` and alone as `make drill-active-active-short`.

Against the running testbed (make up converge), over its WAN, with the load
harness writing (acks=all, idempotent, run-tagged records) throughout, the
demo job (examples/consumer/jobs/active_active.py, written against the
kafka-group-source package's public API only, an entry of spark_stream_jobs in
the inventory) runs on both DCs' Spark clusters in one consumer group,
deployed by playbooks/streaming.yml:

a. both jobs are in the group, each owns about half of the partitions, and
   each DC's Spark host (the job's driver and executors) receives at least
   99% of its Kafka bytes from its own DC's brokers, by its kernel's
   counters (nftables in its network namespace); the brokers' byte counters
   (BytesOut) must agree with what the hosts' kernels received from each
   DC; each record also names the broker that served it (a figure); no
   assignment changes in a calm period (10 minutes with
   STRETCH_DRILL_FULL=1, 1 minute otherwise);
b. the second DC's driver is killed (SIGKILL on its whole service): the
   first DC's job takes every partition; takeover is the time from the kill
   to the first batch of the first DC's job holding a partition the killed
   job owned (at most 15 s). The group's lag in the second DC, as the
   cluster's exporter gives it to the drill's Prometheus (the dashboard's
   lag panel), climbs while its partitions wait, above its calm upper
   quartile and by more than its calm interquartile range, and is back at
   or under its calm highest once the first DC's job has them; the
   dashboard's member panel, read in the same scrape, tells which is which (waiting:
   until it first shows the DC without a member; back: from then until it
   shows the restarted job);
c. systemd starts the killed job again and the work splits again;
d. (the full drill only) the second DC's Kafka nodes are lost
   (dc_failover.yml) and recovered (dc_recovery.yml) while the jobs run; the
   work splits again after; the short drill leaves the DC's loss to the
   failover and group drills that run beside it in `make test`;
e. every acknowledged record reaches the sinks (0 missing); duplicates are
   counted, at most one batch per partition per handover.

The figures go to reports/active-active-drill.json; the sinks, the member
events and the playbooks' logs stay in reports/active-active-drill/.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time

import yaml
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from kafka_group_source import delivery
from kafka_group_source.plan import key
from kafka_group_source.sink import parse_lines
from kafka_smoke import locality
from testkit import activeactive, dcnet
from testkit.cluster import REPO, playbook, wait_until
from testkit.drill import Load, lag_rise_and_fall, loss_windows
from testkit.spark_cluster import SparkNode

REPORTS = REPO / "reports"
WORKDIR = REPORTS / "active-active-drill"
FULL = os.environ.get("STRETCH_DRILL_FULL") == "1"
CALM_SECONDS = 600 if FULL else 60
TAKEOVER_TARGET_SECONDS = 15
LOCAL_SHARE = 0.99
JOB = "active"  # the demo job's entry in spark_stream_jobs
UNIT = f"spark-stream-{JOB}"
STATE = f"/var/lib/spark-stream/{JOB}"
TOPIC = "load"


class SparkHost(SparkNode):
    """A DC's Spark master host, where its job runs, reached over SSH as Ansible reaches it."""

    def read(self, name):
        return self.run(f"cat {STATE}/sink/{name} 2>/dev/null || true")

    def events(self):
        return parse_lines(self.read("events.jsonl"))

    def batches(self):
        return parse_lines(self.read("batches.jsonl"))

    def rows(self):
        return [tuple(r) for r in parse_lines(self.run(f"cat {STATE}/sink/batch-*.jsonl 2>/dev/null || true"))]

    def owned(self, at=None):
        return delivery.owned_at(delivery.owned_over_time(self.events()), at or time.time())

    def main_pid(self):
        return int(self.run(f"systemctl show {UNIT} --property=MainPID --value").strip() or 0)

    def restarts(self):
        return int(self.run(f"systemctl show {UNIT} --property=NRestarts --value").strip() or 0)

    def keep_journal(self, since, path):
        """The job's journal from `since` (epoch seconds) in `path`: why systemd started it again, if it did."""
        path.write_text(self.run(f"journalctl -u {UNIT} --no-pager -o short-iso --since @{int(since)} || true"))


class Drill:
    def __init__(self, cluster):
        self.cluster = cluster
        self.first, self.second = cluster.dcs
        self.hosts = {dc: SparkHost(cluster, dc) for dc in cluster.dcs}
        self.checks, self.figures = [], {}
        self.partitions = None

    def check(self, name, passed, detail=""):
        self.checks.append({"check": name, "passed": bool(passed), "detail": str(detail)})
        print(f"{'PASS' if passed else 'FAIL'}  {name}{': ' + str(detail) if detail != '' else ''}", flush=True)
        return passed

    def playbook(self, name, **extra):
        run = playbook(self.cluster, name, log_dir=WORKDIR / "playbooks", **extra)
        self.check(f"{name}.yml {extra or ''} passes", run.ok, run.log)
        return run

    def owned(self):
        return {dc: host.owned() for dc, host in self.hosts.items()}

    def split(self):
        """Both jobs own partitions, about half each, and together all of them."""
        owned = self.owned()
        half = len(self.partitions) / 2
        together = set().union(*owned.values())
        return together == self.partitions and all(abs(len(o) - half) <= 1 for o in owned.values())

    def flowing(self, dc, since):
        return any(b["at"] > since and b["records"] for b in self.hosts[dc].batches())


def reset_group(cluster):
    """The job's group starts at the topic's end: the drill judges only its own run's records."""
    config = {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}
    admin = AdminClient(config)
    topic = admin.list_topics(TOPIC, timeout=30).topics[TOPIC]
    consumer = Consumer({**config, "group.id": "stretch-drill-offsets"})
    try:
        ends = [TopicPartition(TOPIC, p, consumer.get_watermark_offsets(TopicPartition(TOPIC, p), 30)[1])
                for p in sorted(topic.partitions)]  # fmt: skip
    finally:
        consumer.close()
    group = stream_group()
    errors = []

    def moved():
        # Refused while the group still has members (a killed job's, until its session times out).
        try:
            for future in admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, ends)]).values():
                future.result(timeout=30)
            return True
        except KafkaException as exc:
            errors.append(str(exc))
            return False

    assert wait_until(moved, timeout=90, interval=5), f"group {group}'s offsets could not be set: {errors[-3:]}"
    return {key(TOPIC, p) for p in topic.partitions}


def stream_group():
    """The demo job's group: its entry's in spark_stream_jobs (examples/consumer/inventory), or STRETCH_STREAM_GROUP."""
    jobs = yaml.safe_load((REPO / "examples/consumer/inventory/group_vars/spark.yml").read_text())["spark_stream_jobs"]
    (job,) = [j for j in jobs if j["name"] == JOB]
    return os.environ.get("STRETCH_STREAM_GROUP", job["group"])


def lag_seen(prometheus, group, dc, calm_start, killed_at):
    """The second DC's lag for the group around the kill, from the drill's Prometheus (lag_rise_and_fall), with
    the windows the dashboard's own member count of the DC marks (loss_windows): that count comes from the same
    read of the group as the lag, so the panel's delay needs no guess. Waits (at most 90 s) until the panel has
    shown the DC without a member for 10 s, or with one again."""

    def series(metric, until):
        found = prometheus.query_range(f'sum({metric}{{group="{group}", dc="{dc}"}})', calm_start, until, 2)
        return found[0][1] if found else []

    def shown():
        until = time.time()
        members = series("stretch_consumer_group_members", until)
        _, settled = loss_windows(members, killed_at, until)
        return settled is not None and (settled[1] < until or settled[1] - settled[0] >= 10)

    wait_until(shown, timeout=90, interval=2)
    until = time.time()
    members, lag = series("stretch_consumer_group_members", until), series("stretch_consumer_group_lag", until)
    lost, settled = loss_windows(members, killed_at, until)
    seen = lag_rise_and_fall(lag, (calm_start, killed_at), lost, settled)
    shifted = {w: None if v is None else [round(t - killed_at, 1) for t in v] for w, v in
               (("lost", lost), ("settled", settled))}  # fmt: skip
    count = dict(members)
    points = [(round(t - killed_at), int(v), count.get(t)) for t, v in lag if t > killed_at - 20]
    return {**seen, "windows_after_kill_s": shifted, "from_20_s_before_kill_s_lag_members": points}


def second_start(drill, since):
    """Runs streaming.yml again right after the first start, while both drivers start (an operator's likeliest
    second run): it must change nothing and leave each DC's job the same process (systemd's main PID and restart
    count); when a job is not, its journal since `since` is kept. On the 2-core testbed it takes minutes, and the
    calm that follows starts with the jobs caught up: run after (c) instead, it left the calm to begin while the
    jobs still read the backlog of their start (a calm lag of up to 2,820 records, its upper quartile 992)."""
    pids = {dc: (h.main_pid(), h.restarts()) for dc, h in drill.hosts.items()}
    again = drill.playbook("streaming")
    after = {dc: (h.main_pid(), h.restarts()) for dc, h in drill.hosts.items()}
    same = after == pids and all(pid for pid, _ in pids.values())
    if not same:
        for dc, host in drill.hosts.items():
            host.keep_journal(since, WORKDIR / f"{dc}-journal.log")
    drill.check("each DC's job is the same process after a second start (main PID, systemd's restarts)",
                same, {"first": pids, "second": after})  # fmt: skip
    changed = again.changed if again.output is not None else None
    drill.check("a second start changes nothing and starts no second copy", again.ok and changed == 0,
                f"changed={changed}")  # fmt: skip


def test_active_active_drill(cluster, prometheus):
    started = time.time()
    shutil.rmtree(WORKDIR, ignore_errors=True)
    WORKDIR.mkdir(parents=True, mode=0o700)
    drill = Drill(cluster)
    first, second = drill.first, drill.second
    racks = {n.node_id: n.dc for n in cluster.brokers}
    hosts = {n.node_id: n.address for n in cluster.brokers}
    # A clean start: no job, no checkpoint or sink, the group at the topic's end.
    drill.playbook("streaming", stream_state="stopped")
    for host in drill.hosts.values():
        host.run(f"rm -rf {STATE}/checkpoint {STATE}/sink")
    drill.partitions = reset_group(cluster)

    with Load(cluster, WORKDIR / "load", "the active/active drill", {"loads": {}}):
        first_start = time.time()
        drill.playbook("streaming")
        second_start(drill, first_start)
        began = time.time()
        drill.check(
            "(a) both jobs own about half of the partitions, and together all of them",
            wait_until(drill.split, timeout=180, interval=3),
            {dc: sorted(o) for dc, o in drill.owned().items()},
        )
        drill.check(
            "(a) both jobs write batches",
            wait_until(lambda: all(drill.flowing(dc, began) for dc in drill.hosts), timeout=120, interval=3),
        )

        # (a) A calm period: no assignment change, each job local, the brokers' counters agreeing.
        with kernel_counters(cluster) as kernels:
            calm_start = time.time()
            received_before = {where: counter.read() for where, counter in kernels.items()}
            served_before = locality.scrape(hosts, TOPIC, cluster.metrics_port)
            time.sleep(CALM_SECONDS)
            served_after = locality.scrape(hosts, TOPIC, cluster.metrics_port)
            received_after = {where: counter.read() for where, counter in kernels.items()}
            calm_end = time.time()
        received = {
            where: {dc: after[dc][0] - received_before[where][dc][0] for dc in after}
            for where, after in received_after.items()
        }
        drill.figures["received_calm"] = received
        changes = {dc: delivery.changes_between(h.events(), calm_start, calm_end) for dc, h in drill.hosts.items()}
        drill.check(f"(a) no assignment change in {CALM_SECONDS} calm seconds over the WAN",
                    not any(changes.values()), changes)  # fmt: skip
        calm_batches = {
            dc: [b for b in h.batches() if calm_start <= b["at"] <= calm_end] for dc, h in drill.hosts.items()
        }
        rows = {dc: h.rows() for dc, h in drill.hosts.items()}
        calm_rows = {dc: calm_window_rows(rows[dc], calm_batches[dc]) for dc in drill.hosts}
        drill.figures["locality_by_rows"] = {dc: activeactive.locality(calm_rows[dc], racks, dc) for dc in drill.hosts}
        local = {dc: kernel_locality(received[dc], dc) for dc in drill.hosts}
        drill.figures["locality"] = local
        drill.check(f"(a) each job's Spark host received at least {LOCAL_SHARE:.0%} of its Kafka bytes from its own "
                    "DC (its kernel's counters)", all((s or 0) >= LOCAL_SHARE for s in local.values()),
                    {"locality": local, "by_rows": drill.figures["locality_by_rows"]})  # fmt: skip
        served = locality.locality(served_before, served_after, racks, None)["bytes_by_dc"]
        # Each DC's records are read by its own job's Spark host and by the harness's reader of that DC here.
        brokers = activeactive.brokers_agree(served, received, {dc: [dc, "runner"] for dc in drill.hosts})
        drill.figures["brokers_calm"] = brokers
        drill.check("(a) what each DC's brokers say they served agrees with what the hosts' kernels received from "
                    "that DC", brokers["agree"], brokers)  # fmt: skip

        # (b) The second DC's driver dies.
        owned_before = drill.hosts[second].owned()
        restarts_before = drill.hosts[second].restarts()
        killed_at = time.time()
        drill.hosts[second].run(f"systemctl kill --signal=SIGKILL {UNIT}")
        taken = wait_until(
            lambda: delivery.takeover(drill.hosts[first].batches(), owned_before, killed_at)["all_seconds"],
            timeout=120,
            interval=2,
        )
        takeover = delivery.takeover(drill.hosts[first].batches(), owned_before, killed_at)
        drill.figures["takeover"] = takeover
        drill.figures["takeover_s"] = takeover["first_seconds"]
        drill.check(f"(b) {first}'s job reads every partition {second}'s job owned", taken, takeover)
        drill.check(
            f"(b) takeover within {TAKEOVER_TARGET_SECONDS} s",
            takeover["first_seconds"] is not None and takeover["first_seconds"] <= TAKEOVER_TARGET_SECONDS,
            f"{takeover['first_seconds']} s to the first batch, {takeover['all_seconds']} s to all",
        )
        lag = lag_seen(prometheus, stream_group(), second, calm_start, killed_at)
        drill.figures["lag_around_the_kill"] = lag
        drill.check(
            f"(b) the group's lag in {second} rises while its partitions wait, and falls back once {first}'s "
            "job has them (the dashboard's lag and member panels)",
            lag["rose"] and lag["fell"],
            lag,
        )

        # (c) systemd starts it again; the work splits again.
        back = wait_until(
            lambda: drill.hosts[second].restarts() > restarts_before and drill.split(), timeout=240, interval=3
        )
        drill.figures["resplit_s"] = round(time.time() - killed_at, 1) if back else None
        drill.check(f"(c) systemd starts {second}'s job again and the work splits again", back, drill.owned())

        if FULL:
            lose_and_recover(drill)

    # (e) Every acknowledged record in the sinks; duplicates counted and bounded.
    acked = {tuple(map(int, line.split())) for line in (WORKDIR / "load" / "acks").read_text().splitlines()}
    run_id = json.loads((WORKDIR / "load" / "load.json").read_text())["run_id"]

    def verdict():
        return activeactive.judge({dc: h.rows() for dc, h in drill.hosts.items()}, acked, run_id)

    wait_until(lambda: verdict()["missing"] == 0, timeout=300, interval=5)
    result = verdict()
    events = {dc: h.events() for dc, h in drill.hosts.items()}
    batches = {dc: h.batches() for dc, h in drill.hosts.items()}
    moves = delivery.handovers(events)
    bound = delivery.duplicate_bound(result["duplicates_by_partition"], moves, batches)
    drill.check("(e) every acknowledged record is in the sinks", result["acked"] and result["missing"] == 0,
                f"{result['missing']} of {result['acked']} missing {result['missing_sample']}")  # fmt: skip
    over = {name: {**b, "handovers_at": moves.get(name, [])} for name, b in bound.items() if not b["within"]}
    drill.check("(e) duplicates at most one batch per partition per handover", not over, over or bound)
    drill.playbook("streaming", stream_state="stopped")

    for dc, host in drill.hosts.items():
        for name in ("events.jsonl", "batches.jsonl"):
            (WORKDIR / f"{dc}-{name}").write_text(host.read(name))
    drill.figures.update({
        "missing": result["missing"], "duplicates": result["duplicates"], "records": result["records"],
        "acked": result["acked"], "batches": {dc: len(b) for dc, b in batches.items()},
        "handovers": moves, "duplicate_bound": bound, "calm_seconds": CALM_SECONDS, "full": FULL,
        "drill_seconds": round(time.time() - started),
    })  # fmt: skip
    headline = ("missing", "duplicates", "takeover_s", "locality", "batches", "records")
    report = {**{k: drill.figures.get(k) for k in headline}, "figures": drill.figures, "checks": drill.checks}
    (REPORTS / "active-active-drill.json").write_text(json.dumps(report, indent=2) + "\n")
    failed = [c for c in drill.checks if not c["passed"]]  # with their details: a CI log's tail may be all that is left
    assert not failed, f"failed: {failed}"


def lose_and_recover(drill):
    """(d) The second DC's Kafka nodes lost and recovered while the jobs run."""
    first, second = drill.first, drill.second
    lost_at = time.time()
    drill.playbook("dc_failover", kafka_ops_failover_dc=second)
    time.sleep(30)
    drill.check(f"(d) with {second}'s nodes lost, {first}'s job goes on writing batches",
                drill.flowing(first, lost_at))  # fmt: skip
    drill.playbook("dc_recovery", kafka_ops_failover_dc=second, kafka_ops_recovery_smoke_test=False)
    recovered_at = time.time()
    drill.check(
        f"(d) after {second}'s recovery both jobs own about half and write batches",
        wait_until(lambda: drill.split() and all(drill.flowing(dc, recovered_at) for dc in drill.hosts),
                   timeout=240, interval=3),
        drill.owned(),
    )  # fmt: skip


def calm_window_rows(rows, batches):
    """The rows of the batches written in the calm window (by each batch's partition ranges)."""
    spans = {}
    for batch in batches:
        for name, (first, last) in batch["ranges"].items():
            spans.setdefault(name, []).append((first, last))
    out = []
    for row in rows:
        name = key(row[0], row[1])
        if any(first <= row[2] <= last for first, last in spans.get(name, ())):
            out.append(row)
    return out


def kernel_counters(cluster):
    """The kernel's counters of what each reader host receives from each DC's client listeners, for a block:
    {DC: its Spark host (the job's driver and executors), "runner": this machine (the load harness's readers)}."""
    subnets = {dc: cluster.spark[dc]["network"] for dc in cluster.dcs}
    ports = [cluster.client_port]
    wanted = {**{dc: cluster.spark[dc]["host"] for dc in cluster.dcs}, "runner": None}

    @contextlib.contextmanager
    def counters():
        with contextlib.ExitStack() as stack:
            yield {
                where: stack.enter_context(dcnet.ReceivedBytes(address, subnets, ports, table="stretch_aa_drill"))
                for where, address in wanted.items()
            }

    return counters()


def kernel_locality(received, dc):
    """The share of the bytes a host received from the DCs' listeners that came from dc's; None without any."""
    total = sum(received.values())
    return round(received.get(dc, 0) / total, 4) if total else None
