"""A real broker and a local SparkSession for the source's tests, each started once per session.

The broker: one KRaft node in combined mode (broker and controller), on
the loopback address only, from a Kafka install's libs/ (KAFKA_LIBS, a
directory of Kafka's jars) or from the archive the repository's testbed
builds (testbed/dist/kafka_2.13-*.tgz, by testbed/build-kafka-archive.sh),
with a small heap. Its broker.rack is "dc1", and it lets a group's session
timeout go down to 6 s and its heartbeat interval to 0.5 s, as a stretch
cluster for active/active jobs does.

Spark: local[2], with the source's package on the Python workers' path, and
Spark's own Kafka source (format("kafka")) from the jars the repository's
testbed fetches (testbed/dist/spark-jars, by testbed/fetch-jars.sh), or
SPARK_KAFKA_JARS (a directory of them), for the drop-in test.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import time
import uuid
from pathlib import Path

import pytest

import kafka_group_source

REPO = Path(__file__).resolve().parents[3]
ARCHIVES = sorted((REPO / "testbed" / "dist").glob("kafka_2.13-*.tgz"))
SPARK_KAFKA_JARS = Path(os.environ.get("SPARK_KAFKA_JARS", REPO / "testbed" / "dist" / "spark-jars"))
RACK = "dc1"
START_SECONDS = 90


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_libs(workdir):
    """A directory of Kafka's jars: KAFKA_LIBS, or the testbed's archive unpacked into workdir."""
    if os.environ.get("KAFKA_LIBS"):
        return Path(os.environ["KAFKA_LIBS"])
    if not ARCHIVES:
        pytest.fail(
            "no Kafka to test against: set KAFKA_LIBS to a Kafka install's libs/ directory, or build the testbed's "
            "archive (testbed/build-kafka-archive.sh, run by `make setup-testbed`)"
        )
    with tarfile.open(ARCHIVES[-1]) as archive:
        archive.extractall(workdir, filter="data")
    (libs,) = Path(workdir).glob("kafka_*/libs")
    return libs


def server_properties(data, port, controller_port):
    return f"""process.roles=broker,controller
node.id=1
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.quorum.voters=1@127.0.0.1:{controller_port}
log.dirs={data}
broker.rack={RACK}
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=2
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
group.consumer.min.session.timeout.ms=6000
group.consumer.min.heartbeat.interval.ms=500
"""


class Broker:
    def __init__(self, workdir):
        self.workdir = Path(workdir)
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap_servers = f"127.0.0.1:{self.port}"
        self.process = None

    def java(self, libs, main, *args):
        return [
            shutil.which("java") or "java", "-Xms128m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-cp", f"{libs}/*", main, *args,
        ]  # fmt: skip

    def start(self):
        libs = kafka_libs(self.workdir)
        config = self.workdir / "server.properties"
        config.write_text(server_properties(self.workdir / "data", self.port, self.controller_port))
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        subprocess.run(
            self.java(libs, "kafka.tools.StorageTool", "format", "--cluster-id", cluster_id, "--config", str(config)),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        self.log = (self.workdir / "broker.log").open("w")
        self.process = subprocess.Popen(  # noqa: S603  fixed arguments
            self.java(libs, "kafka.Kafka", str(config)), stdout=self.log, stderr=subprocess.STDOUT
        )
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                if admin.describe_cluster(request_timeout=5).result(timeout=5).nodes:
                    return self
            except Exception:  # noqa: BLE001  not up yet
                time.sleep(1)
        self.stop()
        tail = (self.workdir / "broker.log").read_text()[-3000:]
        pytest.fail(f"the test broker did not start in {START_SECONDS} s:\n{tail}")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        self.log.close()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (`make unit` runs two workers, --dist loadgroup), every test that needs the broker or the
    SparkSession runs on one worker, so the session starts each once, not once per worker. It runs first: xdist's own
    hook reads the groups into the tests' ids, and would miss them otherwise."""
    for item in items:
        if {"broker", "spark"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("kafka-group-source"))


@pytest.fixture(scope="session")
def broker(tmp_path_factory):
    running = Broker(tmp_path_factory.mktemp("kafka")).start()
    yield running
    running.stop()


@pytest.fixture(scope="session")
def spark_kafka_jars():
    """The directory of Spark's own Kafka source's jars the session loads."""
    return SPARK_KAFKA_JARS


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    # The Python workers (the source's driver side and its readers) are processes of their own: they find the
    # package through PYTHONPATH, whether it is installed or tested from its source.
    package_root = str(Path(kafka_group_source.__file__).resolve().parents[1])
    paths = [package_root, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    os.environ["PYSPARK_PYTHON"] = os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    # Spark's JVM works in the directory it starts in (it makes an artifacts/ there): a scratch one.
    here, scratch = os.getcwd(), tmp_path_factory.mktemp("spark")
    os.chdir(scratch)
    try:
        session = (
            SparkSession.builder.master("local[2]")
            .appName("kafka-group-source-tests")
            .config("spark.driver.memory", "512m")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.local.dir", str(scratch))
            .config("spark.jars", ",".join(str(j) for j in sorted(SPARK_KAFKA_JARS.glob("*.jar"))))
            .getOrCreate()
        )
    finally:
        os.chdir(here)
    kafka_group_source.register(session)
    yield session
    session.stop()
