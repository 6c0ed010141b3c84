"""The smoke test against the running cluster: locality per DC, the control read, other clients crossing
between the DCs meanwhile, and bad input.

Runs the smoke test that playbooks/smoke_test.yml runs (`python -m kafka_smoke`, the kafka-smoke package the
role installs on its runner), installed here, with each DC's Spark cluster's secret in a private file as the
role writes it.
"""

import contextlib
import json
import os
import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from testkit import dcnet
from testkit.cluster import REPO, smoke_report_problems
from testkit.loadtest.background import BackgroundLoad

SPARK_JARS = REPO / "testbed/dist/spark-jars"
# The smoke test's own user, with only the ACLs the roles give it.
SMOKE_USER = "kafka-smoke"


def smoke(cluster, tmp_path, *args, bootstrap=None, client_config_file=None):
    cmd = [
        sys.executable, "-m", "kafka_smoke",
        "--bootstrap-servers", bootstrap or cluster.bootstrap_servers,
        "--spark-submit", os.path.join(os.path.dirname(sys.executable), "spark-submit"),
        "--jars", str(SPARK_JARS),
        # Enough data that the fixed cost of the job's TLS and SCRAM
        # connections to the other DC's brokers stays well under 1% of it.
        "--records-per-partition", "1000",
        "--client-config", str(client_config_file or cluster.client_config_file(tmp_path, SMOKE_USER)),
        *args,
    ]  # fmt: skip
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)


def end_offsets(cluster, topic="smoke"):
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap_servers, "group.id": "verify-offsets", **cluster.client_config}
    )
    try:
        parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
    finally:
        consumer.close()


# `make test` checks the same report from the rolling restart's smoke test, run from the artifact alone
# (tests/integration/test_consumer_project.py).
@pytest.mark.outside_ci
def test_each_dc_reads_locally_on_its_own_spark_cluster_and_the_control_read_crosses(cluster, tmp_path):
    # Each DC's read runs on that DC's Spark cluster, whose executors sit on
    # the DC's network; the host routes between the DCs and counts what
    # crosses. The control read (no client.rack, on the first DC's cluster)
    # is served half from the other DC: the same counters see it cross.
    first, second = cluster.dcs
    report_path = tmp_path / "smoke.json"
    dcs = ("--dc", first, "--dc", second)
    proc = smoke(cluster, tmp_path, *dcs, *cluster.spark_args(tmp_path), "--report", str(report_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert smoke_report_problems(cluster, json.loads(report_path.read_text())) == []


# A producer in each DC writing to the other DC's leaders, as the second topology's did when its smoke test failed.
CROSS_RATE = 200  # records a second, of 1 KiB


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.mark.outside_ci  # four and a half minutes: `make verify` runs it, `make test` leaves it out for CI's time
def test_the_router_counts_only_the_reads_own_bytes_while_other_clients_cross_between_the_dcs(cluster, tmp_path):
    # Each DC's producer (in the DC's own network, at its .250 address) writes to the partitions the other DC's
    # brokers lead, for the whole smoke test: its writes cross one way and its acks the other, through the
    # router that counts what crosses into each read's hosts. Those are not the reads' bytes: the smoke test
    # passes, each DC's read under 1% crossed, while the router's whole-network count sees the producers cross.
    first, second = cluster.dcs
    config = cluster.client_config_file(tmp_path)
    report_path = tmp_path / "smoke.json"
    with contextlib.ExitStack() as stack:
        whole = stack.enter_context(dcnet.RoutedBytes(cluster.dcs, [cluster.client_port]))
        before = whole.read()
        producers = {}
        for dc, other in ((first, second), (second, first)):
            client = stack.enter_context(dcnet.DcClient(dc))
            log = stack.enter_context((tmp_path / f"producer-{dc}.log").open("w"))
            cmd = [
                sys.executable, "-m", "testkit.loadtest.traffic", "produce",
                "--bootstrap-servers", cluster.bootstrap_servers, "--topic", "traffic", "--client-config", str(config),
                "--dc", other, "--leader-local", "--records", str(CROSS_RATE * 1200), "--rate", str(CROSS_RATE),
                "--size", "1024", "--timeout", "1500",
            ]  # fmt: skip
            producers[dc] = subprocess.Popen(client.wrap(cmd), cwd=REPO, stdout=log, stderr=subprocess.STDOUT)  # noqa: S603
            stack.callback(stop, producers[dc])
        time.sleep(15)
        writing = {dc: p.poll() is None for dc, p in producers.items()}
        proc = smoke(cluster, tmp_path, "--dc", first, "--dc", second, *cluster.spark_args(tmp_path),
                     "--report", str(report_path))  # fmt: skip
        still = {dc: p.poll() is None for dc, p in producers.items()}
        crossed = dcnet.between(before, whole.read())
    logs = {dc: (tmp_path / f"producer-{dc}.log").read_text()[-1000:] for dc in producers}
    assert all(writing.values()), (writing, logs)
    assert all(still.values()), (still, logs)
    # The producers did cross, both ways (each writes about 200 KB/s for the minutes the smoke test takes).
    for pair in ((first, second), (second, first)):
        assert crossed[pair][0] >= 1_000_000, (pair, crossed)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    reads = {read["dc"]: read for read in json.loads(report_path.read_text())["reads"]}
    for dc in (first, second):
        assert reads[dc]["crossed"]["share"] <= 0.01, reads[dc]["crossed"]
        assert not reads[dc]["problems"], reads[dc]["problems"]
    # The control read still crosses, and the router sees it: the count is of the reads, not of nothing.
    assert 0.35 <= reads[None]["crossed"]["share"] <= 0.65, reads[None]["crossed"]


@pytest.mark.outside_ci  # a minute and a half: `make verify` runs it, `make test` leaves it out for CI's time
def test_the_kernel_counts_only_the_jobs_own_bytes_while_other_clients_on_this_host_read(cluster, tmp_path):
    # The load harness writes and reads (in each DC) from this host's own
    # network; the job's reads run in their own namespace and only they count.
    dc = cluster.brokers[0].dc
    load = BackgroundLoad(
        cluster.bootstrap_servers, cluster.dcs, rate=300, workdir=tmp_path, duration=600,
        client_config_file=cluster.client_config_file(tmp_path, "kafka-load"),
    )  # fmt: skip
    load.start()
    try:
        report_path = tmp_path / "smoke.json"
        proc = smoke(cluster, tmp_path, "--dc", dc, "--network-counters", "--no-control", "--report", str(report_path))
    finally:
        load.stop()
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    (read,) = json.loads(report_path.read_text())["reads"]
    assert read["network"]["bytes_total"] > 0
    assert read["network"][f"share_of_{dc}"] >= 0.99
    assert load.report()["acknowledged"] > 0, "the other client did read and write meanwhile"


def test_the_router_counts_a_read_that_goes_to_the_other_dc_and_the_smoke_test_fails(cluster, tmp_path):
    # A client setting that names the other DC's rack (a misconfigured job):
    # the read on the DC's own cluster is served from the other DC, and both
    # measurements say so.
    dc, other = cluster.dcs
    wrong = tmp_path / "wrong-rack.properties"
    wrong.write_text(cluster.client_config_file(tmp_path, SMOKE_USER).read_text() + f"client.rack={other}\n")
    report_path = tmp_path / "smoke.json"
    proc = smoke(
        cluster, tmp_path, "--dc", dc, *cluster.spark_args(tmp_path, [dc]), "--no-control",
        "--report", str(report_path), client_config_file=wrong,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    (read,) = json.loads(report_path.read_text())["reads"]
    assert read["locality_ratio"] <= 0.01
    assert read["crossed"]["share"] >= 0.99, read["crossed"]
    assert "below the threshold" in " ".join(read["problems"])
    assert "disagree" not in " ".join(read["problems"])


@pytest.mark.parametrize(
    ("args", "bootstrap", "message"),
    [
        ((), "127.0.0.1:1", "no broker answers at the bootstrap address(es) 127.0.0.1:1"),
        (("--topic", "no-such-topic"), None, "topic 'no-such-topic' does not exist"),
        # {dc}: the first broker DC of the inventory; {other_case}: its name in another case; {network}: its network.
        (("--dc", "{other_case}"), None, "DC '{other_case}' matches no broker rack"),
        (("--master", "spark://127.0.0.1:1"), None, "Spark master 'spark://127.0.0.1:1' cannot be reached"),
        (("--dc-network", "{dc}={network}"), None, "each DC's read must run there (--dc-master)"),
    ],
    ids=["wrong bootstrap", "missing topic", "unknown DC", "unreachable master", "network without a DC cluster"],
)
def test_bad_input_is_refused_before_anything_is_written(cluster, tmp_path, args, bootstrap, message):
    dc = cluster.brokers[0].dc
    names = {"dc": dc, "other_case": dc.swapcase(), "network": cluster.brokers[0].network or "192.0.2.0/24"}
    args, message = tuple(a.format(**names) for a in args), message.format(**names)
    before = end_offsets(cluster)
    dcs = () if "--dc" in args else ("--dc", cluster.brokers[0].dc)
    proc = smoke(cluster, tmp_path, *dcs, *args, bootstrap=bootstrap)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert end_offsets(cluster) == before
