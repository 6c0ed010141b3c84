"""The streaming job through a rolling restart and the loss of the other broker DC (`make drill-stream`).

Against the running testbed (make up converge), with the load harness
writing (acks=all, idempotent) throughout:

1. the streaming job (kafka_smoke.stream_job, packages/kafka-smoke) starts in
   the first DC, on that DC's Spark cluster, with kafka.client.rack set to it;
2. every node is restarted, one at a time (playbooks/rolling_restart.yml);
3. the second broker DC is lost and brought back (dc_failover.yml,
   dc_recovery.yml);
4. the job is stopped in the first DC and started in the second from the same
   checkpoint: it must resume where it stopped and read from the second DC;
5. the load stops; once the job has read everything, it stops.

Then every acknowledged record must be in the sink, each offset once. Where
the job read from is counted by the kernel of its DC's Spark host (nftables
in that host's network namespace): the client listener's replies from its
own DC and from the other, in the same unit, every second. The host that
routes between the DCs' networks counts what crossed on its own, and the
two must agree. Every check is printed PASS or FAIL with its figure; the figures go
to reports/stream-drill.json; the job's checkpoint, sink and logs stay in
reports/stream-drill/.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

from kafka_group_source.sink import read_sink
from kafka_smoke import netcount
from kafka_smoke.submit import app_command, submit_command, submit_env
from testkit import dcnet, streamsink
from testkit.cluster import REPO, playbook, wait_until
from testkit.drill import load_problems
from testkit.loadtest.background import BackgroundLoad

REPORTS = REPO / "reports"
SPARK_JARS = REPO / "testbed/dist/spark-jars"
SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")
RATE = 200  # records per second, of 512 B
# Least share of what the job's Spark host received from the Kafka listeners
# that came from its own DC's: both sides counted by the host's kernel, in
# IP bytes, at the same hook. A job served from the other DC gets about half.
LOCAL_SHARE = 0.99
# The router's count of what crossed into a DC and the Spark host's count of
# what it received from the other DC: the router also sees the DC's other
# hosts' replies from across (its brokers' clients), hence the slack.
ROUTER_AGREEMENT = 0.10


class StreamJob:
    """The streaming job on one DC's Spark cluster, in a child process, until stop()."""

    def __init__(self, cluster, dc, workdir, client_config_file):
        self.dc, self.workdir = dc, workdir
        self.stop_file = workdir / f"stop-{dc}"
        self.log = workdir / f"job-{dc}.log"
        spark = cluster.spark[dc]
        confs = [f"spark.driver.host={spark['driver_host']}", *cluster.spark_conf]
        # The DC's cluster admits it with that cluster's secret, from a private file.
        properties = cluster.spark_properties_file(workdir, dc)
        submit = submit_command(SPARK_SUBMIT, spark["master"], f"kafka-stream-{dc}", str(SPARK_JARS), confs, properties)
        self.cmd = app_command(submit, "kafka_smoke.stream_job", [
            "--bootstrap-servers", cluster.bootstrap_servers, "--topic", "load", "--client-rack", dc,
            "--client-config", str(client_config_file), "--checkpoint", str(workdir / "checkpoint"),
            "--sink", str(workdir / "sink"), "--stop-file", str(self.stop_file),
        ])  # fmt: skip
        self.process = None

    def start(self):
        with self.log.open("w") as log:
            self.process = subprocess.Popen(  # noqa: S603  fixed arguments
                self.cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=submit_env(SPARK_SUBMIT)
            )
        return self

    def running(self):
        return self.process.poll() is None

    def stop(self, timeout=120):
        self.stop_file.touch()
        return self.process.wait(timeout=timeout)


class Drill:
    def __init__(self, cluster, workdir):
        self.cluster, self.workdir = cluster, workdir
        self.first, self.second = cluster.dcs
        self.checks, self.figures, self.phases = [], {}, []
        self.sink = workdir / "sink"

    def check(self, name, passed, detail=""):
        self.checks.append({"check": name, "passed": bool(passed), "detail": str(detail)})
        print(f"{'PASS' if passed else 'FAIL'}  {name}{': ' + str(detail) if detail != '' else ''}", flush=True)

    def playbook(self, name, **extra):
        run = playbook(self.cluster, name, log_dir=self.workdir / "playbooks", **extra)
        self.check(f"{name}.yml passes", run.ok, run.log)
        return run

    def phase(self, name, dc, action):
        """Run action(); record the phase's span, and the DC whose job reads meanwhile."""
        began = time.time()
        action()
        self.phases.append({"phase": name, "dc": dc, "start": began, "end": time.time()})

    def batches(self):
        return read_sink(self.sink)[1]

    def wait_for_batches(self, dc, timeout=180):
        """Until the job in dc has written a batch with records."""
        return wait_until(lambda: any(b["dc"] == dc and b["records"] for b in self.batches()), timeout=timeout)


def counted_between(samples, start, end):
    """{counter: what it counted} between start and end, from a sampler's cumulative samples ({} without two)."""
    inside = [(t, counts) for t, counts in samples if start <= t <= end]
    if len(inside) < 2:
        return {}
    (_, first), (_, last) = inside[0], inside[-1]
    return {key: last[key] - first[key] for key in last}


def crossed_into(samples, dc, start, end):
    """Bytes the router counted crossing into dc between start and end."""
    return sum(n for (_, to), n in counted_between(samples, start, end).items() if to == dc)


def test_stream_drill(cluster):
    # The job's checkpoint, its sink and the load's files, kept for a look afterwards.
    workdir = REPORTS / "stream-drill"
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True, mode=0o700)
    drill = Drill(cluster, workdir)
    first, second = drill.first, drill.second
    load = BackgroundLoad(
        cluster.bootstrap_servers, cluster.dcs, rate=RATE, workdir=workdir, duration=3600,
        client_config_file=cluster.client_config_file(workdir, "kafka-load"),
    )  # fmt: skip
    # The job's own user: it may read the load topic, nothing else.
    config = cluster.client_config_file(workdir, "kafka-stream-drill")
    subnets = {dc: cluster.spark[dc]["network"] for dc in cluster.dcs}
    with contextlib.ExitStack() as counters:
        routed = counters.enter_context(
            netcount.RoutedBytes(subnets, [cluster.client_port], table="stretch_stream_drill")
        )
        # What each DC's Spark host (its executors) receives from each DC's listeners.
        received = {
            dc: counters.enter_context(dcnet.ReceivedBytes(cluster.spark[dc]["host"], subnets, [cluster.client_port]))
            for dc in cluster.dcs
        }
        sampler = dcnet.Sampler(routed)
        hosts = {dc: dcnet.Sampler(counter) for dc, counter in received.items()}
        for one in (sampler, *hosts.values()):
            one.start()
        load.start()
        jobs = {first: StreamJob(cluster, first, workdir, config).start()}
        try:
            drill.phase("start", first, lambda: drill.wait_for_batches(first))
            drill.check(f"the job reads in {first}", jobs[first].running() and drill.wait_for_batches(first, 1))
            drill.phase("steady", first, lambda: time.sleep(20))
            drill.phase(
                "rolling restart", first, lambda: drill.playbook("rolling_restart", kafka_ops_restart_smoke_test=False)
            )
            drill.phase("steady after the restart", first, lambda: time.sleep(20))
            drill.phase("lose dc", first, lambda: drill.playbook("dc_failover", kafka_ops_failover_dc=second))
            drill.phase(f"{second} lost", first, lambda: time.sleep(30))
            recover = {"kafka_ops_failover_dc": second, "kafka_ops_recovery_smoke_test": False}
            drill.phase(f"recover {second}", first, lambda: drill.playbook("dc_recovery", **recover))
            drill.phase("steady after the recovery", first, lambda: time.sleep(20))
            drill.check(f"the job in {first} kept running throughout", jobs[first].running())
            drill.check(f"the job in {first} stops on request", jobs[first].stop() == 0, jobs[first].log)
            jobs[second] = StreamJob(cluster, second, workdir, config).start()
            drill.phase(f"switch to {second}", second, lambda: drill.wait_for_batches(second))
            drill.phase(f"steady in {second}", second, lambda: time.sleep(30))
        finally:
            load.stop()
        acked = {tuple(map(int, line.split())) for line in (workdir / "acks").read_text().splitlines()}
        run_id = load.report()["run_id"]

        def drained():
            files, _ = read_sink(drill.sink)
            return streamsink.judge(streamsink.rows_of(files), acked, run_id)["missing"] == 0

        drill.phase(f"drain in {second}", second, lambda: wait_until(drained, timeout=180, interval=3))
        drill.check(f"the job in {second} kept running and stops on request",
                    jobs[second].running() and jobs[second].stop() == 0, jobs[second].log)  # fmt: skip
        for job in jobs.values():
            if job.running():
                job.process.kill()
        samples = sampler.stop()
        host_samples = {dc: one.stop() for dc, one in hosts.items()}

    files, batches = read_sink(drill.sink)
    verdict = streamsink.judge(streamsink.rows_of(files), acked, run_id)
    drill.figures["sink"] = verdict
    problems = load_problems(load.report())
    drill.check("every write of the load confirmed: none failed or unconfirmed, none lost by its DC readers",
                not problems, "; ".join(problems) or "all acknowledged")  # fmt: skip
    drill.check("every acknowledged record is in the sink", verdict["missing"] == 0,
                f"{verdict['missing']} of {verdict['acked']} missing {verdict['missing_sample']}")  # fmt: skip
    drill.check("each offset is in the sink once", verdict["duplicated_offsets"] == 0,
                f"{verdict['duplicated_offsets']} offsets more than once")  # fmt: skip

    resumed = streamsink.resumed(files, batches, second)
    last_first = max((b["batch"] for b in batches if b["dc"] == first), default=-1)
    drill.figures["resume"] = {"last_batch_in_first": last_first, **resumed, "joins": None}
    drill.check(
        f"started in {second} from the same checkpoint, the job resumes where it stopped in {first}",
        resumed["first_batch"] in (last_first, last_first + 1) and not resumed["gaps"] and resumed["joins"],
        f"last batch in {first} {last_first}, first in {second} {resumed['first_batch']}, "
        f"partitions not continued: {resumed['gaps']}",
    )

    figures = []
    for p in drill.phases:
        in_phase = [b for b in batches if p["start"] <= b["at"] <= p["end"] and b["dc"] == p["dc"]]
        records = sum(b["records"] for b in in_phase)
        crossed = crossed_into(samples, p["dc"], p["start"], p["end"])
        got = counted_between(host_samples[p["dc"]], p["start"], p["end"])
        read = sum(r[5] for r in streamsink.rows_of(files, {b["batch"] for b in in_phase}))
        seconds = p["end"] - p["start"]
        figures.append({
            "phase": p["phase"], "dc": p["dc"], "seconds": round(seconds, 1), "records": records,
            "crossed_bytes": crossed, "crossed_bytes_per_second": round(crossed / seconds) if seconds else 0,
            "received_bytes": got, "read_bytes": read,
            "longest_stall_seconds": round(streamsink.longest_stall(batches, p["start"], p["end"]), 1),
        })  # fmt: skip
        print(f"      {figures[-1]}", flush=True)
    drill.figures["phases"] = figures
    for dc in (first, second):
        phases = [f for f in figures if f["dc"] == dc]
        own = sum(f["received_bytes"].get(dc, 0) for f in phases)
        other = sum(b for f in phases for src, b in f["received_bytes"].items() if src != dc)
        crossed = sum(f["crossed_bytes"] for f in phases)
        share = own / (own + other) if own + other else 0.0
        drill.figures[f"local_share_{dc}"] = round(share, 4)
        drill.check(f"the job in {dc} read its bytes from {dc}", own > 0 and share >= LOCAL_SHARE,
                    f"its Spark host received {own:,} B from {dc}'s listeners and {other:,} B from the other DC's "
                    f"({share:.2%} local)")  # fmt: skip
        # The router counts the same crossing on its own, at the subnets' boundary.
        drill.check(f"the router and {dc}'s Spark host agree on the bytes that crossed into {dc}",
                    abs(crossed - other) <= max(ROUTER_AGREEMENT * max(crossed, other), 64 * 1024),
                    f"router {crossed:,} B, host {other:,} B")  # fmt: skip
    stalls = {f["phase"]: f["longest_stall_seconds"] for f in figures}
    drill.figures["longest_stalls"] = stalls

    (REPORTS / "stream-drill.json").write_text(json.dumps({"checks": drill.checks, "figures": drill.figures}, indent=2))
    failed = [c["check"] for c in drill.checks if not c["passed"]]
    assert not failed, f"failed: {failed}"
