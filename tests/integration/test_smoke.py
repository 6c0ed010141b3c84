"""The smoke test against the running cluster: locality per DC, the control read, and bad input.

Runs the same `python -m smoke` that playbooks/smoke-test.yml runs.
"""

import json
import os
import subprocess
import sys

import pytest
from confluent_kafka import Consumer, TopicPartition

from loadtest.background import BackgroundLoad
from tests.cluster import REPO

SPARK_JARS = REPO / "testbed/dist/spark-jars"
# The smoke test's own user, with only the ACLs the roles give it.
SMOKE_USER = "kafka-smoke"


def smoke(cluster, tmp_path, *args, bootstrap=None, client_config_file=None):
    cmd = [
        sys.executable, "-m", "smoke",
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


def test_a_dc_read_is_local_and_the_control_read_is_not(cluster, tmp_path):
    dc = cluster.brokers[0].dc
    report_path = tmp_path / "smoke.json"
    proc = smoke(cluster, tmp_path, "--dc", dc, "--report", str(report_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    report = json.loads(report_path.read_text())
    local, control = report["reads"]
    assert local["dc"] == dc
    assert local["validation"]["ok"]
    assert local["locality_ratio"] >= 0.99
    # Without client.rack the same read comes from the leaders, half in each
    # DC: the measurement that passes the DC read fails this one.
    assert control["control"]
    assert control["validation"]["ok"]
    assert 0.35 <= control["share_by_dc"][dc] <= 0.65


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


def test_the_kernel_counts_a_read_that_goes_to_the_other_dc_and_the_smoke_test_fails(cluster, tmp_path):
    # A client setting that names the other DC's rack (a misconfigured job):
    # the read is served from the other DC, and both measurements say so.
    dc, other = cluster.dcs
    wrong = tmp_path / "wrong-rack.properties"
    wrong.write_text(cluster.client_config_file(tmp_path, SMOKE_USER).read_text() + f"client.rack={other}\n")
    report_path = tmp_path / "smoke.json"
    proc = smoke(
        cluster, tmp_path, "--dc", dc, "--network-counters", "--no-control", "--report", str(report_path),
        client_config_file=wrong,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    (read,) = json.loads(report_path.read_text())["reads"]
    assert read["locality_ratio"] <= 0.01
    assert read["network"][f"share_of_{dc}"] <= 0.01
    assert "below the threshold" in " ".join(read["problems"])
    assert "disagree" not in " ".join(read["problems"])


@pytest.mark.parametrize(
    ("args", "bootstrap", "message"),
    [
        ((), "127.0.0.1:1", "no broker answers at the bootstrap address(es) 127.0.0.1:1"),
        (("--topic", "no-such-topic"), None, "topic 'no-such-topic' does not exist"),
        (("--dc", "DC1"), None, "DC 'DC1' matches no broker rack"),
        (("--master", "spark://127.0.0.1:1"), None, "Spark master 'spark://127.0.0.1:1' cannot be reached"),
    ],
    ids=["wrong bootstrap", "missing topic", "unknown DC", "unreachable master"],
)
def test_bad_input_is_refused_before_anything_is_written(cluster, tmp_path, args, bootstrap, message):
    before = end_offsets(cluster)
    dcs = () if "--dc" in args else ("--dc", cluster.brokers[0].dc)
    proc = smoke(cluster, tmp_path, *dcs, *args, bootstrap=bootstrap)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert end_offsets(cluster) == before
