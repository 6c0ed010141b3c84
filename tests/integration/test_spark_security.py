"""What each DC's Spark cluster refuses, each refusal beside a control that passes (docs/security.md#spark).

Small PySpark applications are submitted from this host with spark-submit in
client mode, as the smoke test's reads are, at the same time to both DCs'
clusters, each with its Spark settings in a private file (--properties-file):

- with its DC cluster's secret it runs its tasks on the DC's worker (the
  control), and its --verbose listing shows the secret and a Kafka JAAS
  configuration redacted;
- without any Spark security or with the other DC's secret (on each DC's
  cluster), or with the right secret but without RPC encryption (on the
  first DC's), its master refuses every connection (Spark's own words:
  "Unknown challenge message.", "Authentication failed."), the driver gives
  up ("All masters are unresponsive! Giving up."), and the master never
  lists it.

Meanwhile the process lists here and on the Spark nodes are sampled: no
secret (neither DC's, nor the Kafka password in the controls' JAAS
configuration) appears on a command line, while the daemons, an executor
and the drivers are seen with their settings files; the control's driver
serves no web UI. Afterwards no such secret is in the daemons' journals or
the executors' logs. From a client placed in the other DC's network, and from
this host, the master's and worker's UIs (8080, 8081) and the REST
submission port (6066) refuse the connection while the master's RPC port
(7077) accepts it; on the node itself the UIs answer.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import spark_security
from testkit import dcnet
from testkit.cluster import private_file
from testkit.spark_cluster import APP_RESULT, Sampler, SparkNode, Submission, probe

MASTER_UI, WORKER_UI, REST, RPC = 8080, 8081, 6066, 7077  # roles/spark's defaults
GIVE_UP = "All masters are unresponsive! Giving up."
# What the master answers a client whose first message is no challenge of Spark's protocol
# (no authentication at all, or SASL without encryption), and one with another secret.
NOT_SPARK_AUTH = "Unknown challenge message."
WRONG_SECRET = "Authentication failed."
REDACTED = "*********(redacted)"
# A Kafka JAAS configuration the control carries as a Spark setting: --verbose must hide it.
JAAS_KEY = "spark.stretch.kafka.sasl.jaas.config"
# How long the control keeps its executor after its result, for the process sampler to see it.
HOLD_SECONDS = 20
# The settings of an application that knows nothing of the cluster's security.
NO_SECURITY = {"spark.ui.enabled": "false"}
CASES = {
    "control": "the cluster's secret",
    "none": "no Spark security at all",
    "wrong": "the other DC's secret",
    "unencrypted": "the cluster's secret without RPC encryption",
}
# Tried on every DC's cluster; "unencrypted" on the first DC's only (the same settings on the other DC's
# would add a JVM to a loaded machine and try nothing new).
EVERY_DC = ("control", "none", "wrong")

# Seven Spark applications (minutes): `make verify` runs them; `make test` leaves them out for CI's time (every
# smoke test's reads run on each DC's cluster with its own secret).
pytestmark = pytest.mark.outside_ci


def secrets(cluster):
    """{dc: its Spark cluster's secret}."""
    return {dc: cluster.spark[dc]["secret"] for dc in cluster.dcs}


def cases(cluster, case):
    """The DCs whose cluster case was tried on."""
    return cluster.dcs if case in EVERY_DC else cluster.dcs[:1]


@pytest.fixture(scope="module")
def nodes(cluster):
    return {dc: SparkNode(cluster, dc) for dc in cluster.dcs}


@pytest.fixture(scope="module")
def attempts(cluster, nodes, tmp_path_factory):
    """Every case on every DC's cluster at once, with the process lists sampled meanwhile:
    ({(dc, case): Submission}, Sampler, the JAAS password the controls carried)."""
    workdir = tmp_path_factory.mktemp("spark-security")
    run = uuid.uuid4().hex[:8]
    jaas_password = f"jaas-{uuid.uuid4().hex}"
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="kafka-smoke" password="{jaas_password}";'
    )
    submissions = {}
    for dc in cluster.dcs:
        other = next(d for d in cluster.dcs if d != dc)
        spark = cluster.spark[dc]
        files = {
            "control": cluster.spark_properties_file(workdir, dc, f"{dc}-control.properties", extra={JAAS_KEY: jaas}),
            "none": private_file(workdir / f"{dc}-none.properties", spark_security.render(NO_SECURITY)),
            "wrong": cluster.spark_properties_file(
                workdir, dc, f"{dc}-wrong.properties", secret=cluster.spark[other]["secret"]
            ),
            "unencrypted": cluster.spark_properties_file(
                workdir, dc, f"{dc}-unencrypted.properties", extra={"spark.network.crypto.enabled": "false"}
            ),
        }
        confs = [f"spark.driver.host={spark['driver_host']}", "spark.cores.max=1", "spark.executor.memory=512m",
                 "spark.driver.memory=512m"]  # fmt: skip
        for case, properties in files.items():
            if dc not in cases(cluster, case):
                continue
            submissions[(dc, case)] = Submission(
                spark["master"], f"spark-security-{run}-{dc}-{case}", properties, workdir, confs,
                verbose=case == "control", hold_seconds=HOLD_SECONDS if case == "control" else 0,
            )  # fmt: skip
    controls = [s.name for (_, case), s in submissions.items() if case == "control"]
    sampler = Sampler(list(nodes.values()), controls)
    sampler.start()
    try:
        for submission in submissions.values():
            submission.wait(timeout=600)
    finally:
        for submission in submissions.values():
            submission.kill()
        sampler.stop()
    return submissions, sampler, jaas_password


def test_each_cluster_runs_an_application_with_its_own_secret(cluster, nodes, attempts):
    submissions, _, _ = attempts
    for dc in cluster.dcs:
        control = submissions[(dc, "control")]
        assert control.returncode == 0, control.stderr[-3000:]
        assert APP_RESULT in control.stdout, control.stdout
        assert control.name in nodes[dc].applications()


@pytest.mark.parametrize("case", ["none", "wrong", "unencrypted"])
def test_an_application_without_the_clusters_secret_is_refused(cluster, nodes, attempts, case):
    submissions, _, _ = attempts
    for dc in cases(cluster, case):
        refused = submissions[(dc, case)]
        assert refused.returncode != 0, f"{dc}, {CASES[case]}: it ran\n{refused.stdout}"
        assert APP_RESULT not in refused.stdout
        assert GIVE_UP in refused.stderr, refused.stderr[-3000:]
        assert (WRONG_SECRET if case == "wrong" else NOT_SPARK_AUTH) in refused.stderr, refused.stderr[-3000:]
        listed = nodes[dc].applications()
        assert refused.name not in listed
        # The control beside it, submitted at the same time from the same host, was admitted.
        assert submissions[(dc, "control")].name in listed


def test_spark_shows_the_secret_and_a_jaas_configuration_redacted(cluster, attempts):
    submissions, _, jaas_password = attempts
    for dc in cluster.dcs:
        control = submissions[(dc, "control")]
        # --verbose lists the settings spark-submit read from the properties file, each secret one redacted.
        assert f"(spark.authenticate.secret,{REDACTED})" in control.stderr, control.stderr[-3000:]
        assert f"({JAAS_KEY},{REDACTED})" in control.stderr
        assert "(spark.ui.enabled,false)" in control.stderr
        for text in (control.stdout, control.stderr):
            assert jaas_password not in text
            for secret in secrets(cluster).values():
                assert secret not in text


def test_no_secret_is_on_a_command_line_here_or_on_the_spark_nodes(cluster, attempts):
    submissions, sampler, jaas_password = attempts
    everything = {"this host": sampler.local, **sampler.remote}
    for where, samples in everything.items():
        assert samples, f"no process list read on {where}"
        for ps in samples:
            for dc, secret in secrets(cluster).items():
                assert secret not in ps, f"{dc}'s Spark secret is on a command line on {where}"
            assert jaas_password not in ps, f"the controls' Kafka password is on a command line on {where}"
    # The lists held what they had to: the daemons with their settings file, an executor started
    # with authentication on, and this host's drivers with theirs.
    for dc in cluster.dcs:
        seen = "\n".join(sampler.remote[dc])
        assert "org.apache.spark.deploy.master.Master" in seen
        assert "org.apache.spark.deploy.worker.Worker" in seen
        assert "--properties-file /etc/spark/daemon.properties" in seen
        executors = [line for line in seen.splitlines() if "CoarseGrainedExecutorBackend" in line]
        assert executors, f"{dc}: no executor seen while the control ran"
        assert all("-Dspark.authenticate=true" in line for line in executors)
    drivers = [line for ps in sampler.local for line in ps.splitlines() if "deploy.SparkSubmit" in line]
    for submission in submissions.values():
        mine = [line for line in drivers if re.search(rf"--name {re.escape(submission.name)}(\s|$)", line)]
        assert mine, f"{submission.name}: its driver was not seen on this host"
        assert all("--properties-file " in line for line in mine)


def test_an_application_serves_no_web_ui(cluster, attempts):
    submissions, sampler, _ = attempts
    for dc in cluster.dcs:
        name = submissions[(dc, "control")].name
        ports = sampler.ports.get(name)
        # Its driver listened (its RPC and block manager ports, on the DC network's address of this
        # host): none of them answers HTTP, as an application UI would.
        assert ports, f"{dc}: the control's driver was not seen listening"
        assert not any(ports.values()), f"{dc}: the control's driver answers HTTP on {ports}"


def test_no_secret_is_in_the_spark_logs(cluster, nodes, attempts):
    submissions, _, jaas_password = attempts
    for dc, node in nodes.items():
        logs = node.logs()
        # The logs cover this run: the master registered the control and its worker launched its executor.
        control = submissions[(dc, "control")].name
        assert f"Registering app {control}" in logs, f"{dc}: the master's journal does not show the control"
        assert f"for {control}" in logs, f"{dc}: the worker's journal does not show the control's executor"
        assert "Spark Executor Command" in logs, f"{dc}: no executor log read"
        for other, secret in secrets(cluster).items():
            assert secret not in logs, f"{other}'s Spark secret is in {dc}'s Spark logs"
        assert jaas_password not in logs, f"the controls' Kafka password is in {dc}'s Spark logs"


def test_the_web_uis_and_the_rest_port_answer_nobody_from_another_network(cluster, nodes):
    ports = [MASTER_UI, WORKER_UI, REST, RPC]
    for dc in cluster.dcs:
        other = next(d for d in cluster.dcs if d != dc)
        host = cluster.spark[dc]["host"]
        with dcnet.DcClient(other) as client:
            out = subprocess.run(
                client.wrap([sys.executable, "-m", "testkit.spark_cluster", host, *map(str, ports)]),
                capture_output=True, text=True, check=True, timeout=120,
            ).stdout  # fmt: skip
        for where, found in ((f"{other}'s network", json.loads(out)), ("this host", probe(host, ports))):
            # The RPC port accepts the connection (it then asks for the secret): the node is reachable.
            assert found[str(RPC)] == "open", (where, found)
            for port in (MASTER_UI, WORKER_UI, REST):
                assert found[str(port)] == "refused", (dc, where, port, found)
        # On the node itself the UIs answer: the master lists its worker, the worker names its master.
        master = nodes[dc].status(MASTER_UI)
        assert master["status"] == "ALIVE"
        assert [w for w in master["workers"] if w["state"] == "ALIVE"], master["workers"]
        assert nodes[dc].status(WORKER_UI)["masterurl"] == cluster.spark[dc]["master"]
