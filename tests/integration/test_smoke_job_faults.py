"""The Spark job itself finds missing, duplicate, corrupt and foreign records.

Writes a crafted data set to a scratch topic (one partition): a gap, a
duplicated sequence number, a payload that fails its checksum and a record
of another run. Then runs the smoke job (kafka_smoke.job) with spark-submit over exactly those
offsets and checks what it reports.
"""

import json
import os
import subprocess
import sys
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from kafka_smoke import records
from kafka_smoke.submit import app_command, submit_command, submit_env
from testkit.cluster import REPO, create_topic

SPARK_SUBMIT = os.path.join(os.path.dirname(sys.executable), "spark-submit")


@pytest.fixture
def scratch_topic(cluster):
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})
    name = f"verify-smoke-faults-{uuid.uuid4().hex[:8]}"
    create_topic(admin, name, partitions=1, replication_factor=4)
    yield name
    admin.delete_topics([name])[name].result(timeout=60)


def test_the_spark_job_reports_each_kind_of_fault(cluster, scratch_topic, tmp_path):
    run_id = "faults"
    good = [records.encode(run_id, 0, seq, 64) for seq in range(10)]
    corrupt = json.loads(records.encode(run_id, 0, 7, 64))
    corrupt["sha256"] = "0" * 64
    values = (
        good[:3]
        + good[4:7]  # seq 3 missing
        + [good[5]]  # seq 5 twice
        + [json.dumps(corrupt).encode()]
        + good[8:]  # seq 7 corrupt
        + [records.encode("another-run", 0, 1, 64)]  # not ours
    )
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", **cluster.client_config})
    for value in values:
        producer.produce(scratch_topic, value=value, partition=0)
    assert producer.flush(60) == 0

    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({
        "topic": scratch_topic, "run_id": run_id,
        "partitions": {"0": {"start": 0, "end": len(values), "expected": 10}},
    }))  # fmt: skip
    seen_path = tmp_path / "seen.json"
    submit = submit_command(SPARK_SUBMIT, "local[2]",
                            "kafka-smoke-faults", str(REPO / "testbed/dist/spark-jars"), [])  # fmt: skip
    proc = subprocess.run(
        app_command(submit, "kafka_smoke.job", [
            "--manifest", str(manifest), "--bootstrap-servers", cluster.bootstrap_servers,
            "--client-rack", cluster.brokers[0].dc, "--out", str(seen_path),
            "--client-config", str(cluster.client_config_file(tmp_path))]),
        cwd=REPO, capture_output=True, text=True, timeout=600, env=submit_env(SPARK_SUBMIT),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(seen_path.read_text())
    validation = records.validation({"0": 10}, seen["observed"])
    assert validation["ok"] is False
    assert (validation["read"], validation["missing"], validation["duplicate"], validation["corrupt"],
            validation["foreign"]) == (len(values), 1, 1, 1, 1)  # fmt: skip
