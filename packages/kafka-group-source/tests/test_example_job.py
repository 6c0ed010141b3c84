"""The repository's active/active demo job (examples/consumer/jobs/active_active.py), written against this
package's public API only, run as the spark_stream role runs it: spark-submit with the role's environment
(kafka_group_source.service), against the real broker, on local[2].

It says it runs (its ready file), reads the records into its sink with a load-harness record's run and
sequence number, ends with 0 on its stop file; and a bad setting stops it with 2 and the setting's name,
before Spark starts, as the role's service expects.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_group_source
from kafka_group_source.sink import read_sink

JOB = Path(__file__).resolve().parents[3] / "examples" / "consumer" / "jobs" / "active_active.py"
SPARK_SUBMIT = Path(sys.executable).parent / "spark-submit"


def environment(broker, topic, group, state_dir, **overrides):
    package_root = str(Path(kafka_group_source.__file__).resolve().parents[1])
    paths = [package_root, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "KAFKA_TOPICS": topic,
        "KAFKA_GROUP_ID": group,
        "KAFKA_CLIENT_RACK": "dc1",
        "KAFKA_GROUP_SESSION_TIMEOUT_MS": "6000",
        "KAFKA_GROUP_HEARTBEAT_INTERVAL_MS": "500",
        "SPARK_STREAM_STATE_DIR": str(state_dir),
        "SPARK_STREAM_READY_FILE": str(state_dir / "ready"),
        "SPARK_STREAM_STOP_FILE": str(state_dir / "stop"),
        **overrides,
    }


def submit(env, cwd, *args):
    cmd = [str(SPARK_SUBMIT), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
           "--conf", "spark.driver.memory=512m", str(JOB), "--trigger-seconds", "1", *args]  # fmt: skip
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # noqa: S603


def wait_until(check, timeout):
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.5)
    return check()


@pytest.fixture
def topic(broker):
    name = f"load-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
    admin.create_topics([NewTopic(name, 2, 1)])[name].result(30)
    assert wait_until(lambda: len(admin.list_topics(name, timeout=10).topics[name].partitions) == 2, 30)
    return name


def test_the_demo_job_runs_as_the_roles_service_and_stops_on_its_stop_file(broker, topic, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    job = submit(environment(broker, topic, f"demo-{uuid.uuid4().hex[:6]}", state), tmp_path, "--fetch-stats")
    try:
        assert wait_until(lambda: (state / "ready").exists() or job.poll() is not None, 180), "no ready file"
        assert job.poll() is None, job.communicate()[1][-3000:]
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for seq in range(20):
            producer.produce(topic, f"LOAD:run7:{seq % 2}:{seq}:{'x' * 100}".encode(), partition=seq % 2)
        producer.produce(topic, b"not a load record", partition=0)
        assert producer.flush(30) == 0

        def rows():
            sink = state / "sink"
            return [r for batch in read_sink(sink)[0].values() for r in batch] if sink.exists() else []

        assert wait_until(lambda: len(rows()) == 21, 120), rows()
        by_seq = {r[4]: r for r in rows() if r[3] == "run7"}
        assert sorted(by_seq) == list(range(20))
        topic_, partition, _offset, run, seq, size, broker_id = by_seq[5]
        assert (topic_, partition, run, seq, size, broker_id) == (topic, 1, "run7", 5, len("LOAD:run7:1:5:") + 100, 1)
        other = [tuple(r[3:5]) for r in rows() if r[3] != "run7"]
        assert other == [(None, None)], "a record of no load run has no run or sequence"
        assert (state / "sink" / "events.jsonl").exists(), "the group member's events"
        (state / "stop").touch()
        assert job.wait(timeout=120) == 0, job.communicate()[1][-3000:]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait(timeout=30)


def test_a_bad_setting_stops_the_demo_job_with_2_and_its_name(broker, topic, tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    job = submit(environment(broker, topic, "demo-refused", state, KAFKA_CLIENT_RACK="dc9"), tmp_path)
    out, err = job.communicate(timeout=180)
    assert job.returncode == 2, err[-3000:]
    # spark-submit passes the Python application's output on through its own stdout (a service's journal holds both).
    assert "active_active: bad setting: client.rack 'dc9' is no broker's rack" in out + err, (out + err)[-3000:]
    assert not (state / "ready").exists()
