"""playbooks/streaming.yml refuses a job that could not run, naming it, before it touches any host.

The real ansible-playbook against an inventory whose hosts point at a closed
port: a refusal must come from the spark_stream role's preflight, with no
host tried (none unreachable); a sound job passes it, and the run goes on to
the hosts (which are then unreachable: the control).
"""

import zipfile

import pytest
from test_preflight_playbook import SECRETS, add_spark, base_inventory, run

REFUSAL = "Refuse a job that could not run"


def inventory(tmp_path, *jobs, **extra):
    """Spark in dc1 and dc2, and jobs of user etl, whose ACLs the kafka role grants (kafka_stream_*)."""
    inv = base_inventory()
    add_spark(inv, "dc1", spark_archive_src="/srv/spark.tgz")
    add_spark(inv, "dc2", spark_archive_src="/srv/spark.tgz")
    job_file = tmp_path / "etl.py"
    job_file.write_text("print('etl')\n")
    defaults = {"name": "etl", "file": str(job_file), "group": "orders-etl", "topics": ["orders"], "user": "etl"}
    inv["all"]["vars"].update(
        kafka_users=[{"name": "kafka-smoke", "password": SECRETS["smoke"]}, {"name": "etl", "password": "etl-pw-8f2"}],
        kafka_topics=[{"name": "orders", "partitions": 4}],
        kafka_stream_user="etl",
        kafka_stream_group="orders-etl",
        kafka_stream_topics=["orders"],
        spark_stream_jobs=[{**defaults, **job} for job in jobs] or [defaults],
        **extra,
    )
    return inv


def refused_before_any_host(result):
    unreachable = [h for h, s in result.recap.items() if s.get("unreachable")]
    failed = [h for h, r in result.results(REFUSAL) if r.get("failed")]
    return not unreachable and failed


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        ([{"file": "/srv/jobs/gone.py"}], "job 'etl': its file /srv/jobs/gone.py is missing on the controller"),
        ([{}, {"name": "etl-replay"}], "group 'orders-etl' is shared by jobs 'etl', 'etl-replay': each job needs"),
        ([{"user": "nobody"}], "job 'etl': its user 'nobody' is not declared in kafka_users"),
        ([{"topics": ["orders", "refunds"]}], "job 'etl': its user 'etl' lacks read on topic 'refunds', describe on "
                                              "topic 'refunds': declare them in kafka_acls"),
    ],
    ids=["missing file", "group shared by two jobs", "undeclared user", "user without its acls"],
)  # fmt: skip
def test_a_job_that_could_not_run_is_refused_by_name_before_any_host(jobs, message, tmp_path):
    rc, out, result = run("streaming.yml", inventory(tmp_path, *jobs), tmp_path)
    assert rc != 0, out
    assert message in out, out
    assert refused_before_any_host(result), result.recap


def test_a_module_that_no_wheel_holds_is_refused(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with zipfile.ZipFile(wheels / "orders_etl-1.0-py3-none-any.whl", "w") as wheel:
        wheel.writestr("orders_etl/__init__.py", "")
    inv = inventory(tmp_path, {"file": "", "module": "orders_etl.main"}, spark_stream_wheel_dir=str(wheels))
    rc, out, result = run("streaming.yml", inv, tmp_path)
    assert rc != 0, out
    assert "job 'etl': its module orders_etl.main is missing: no wheel of spark_stream_wheel_dir holds it" in out, out
    assert refused_before_any_host(result), result.recap


def test_a_sound_job_passes_preflight_and_the_run_goes_on_to_the_hosts(tmp_path):
    rc, out, result = run("streaming.yml", inventory(tmp_path), tmp_path)
    assert rc != 0, out  # every host points at a closed port
    judged = result.results(REFUSAL)
    assert judged, "the jobs were never judged"
    assert not [h for h, r in judged if r.get("failed")], out
    assert [h for h, s in result.recap.items() if s.get("unreachable")], "the control never reached for a host"


@pytest.mark.parametrize(
    ("spark_conf", "message"),
    [
        (["spark.cores.max=2", "spark.ssl.keyStorePassword=hunter2-9f3"],
         "its spark_conf[1] (spark.ssl.keyStorePassword) holds a secret"),
        (["spark.ssl.keyStorePassword hunter2-9f3"], "its spark_conf[0] is not KEY=VALUE"),
    ],
    ids=["a keystore password", "spark-defaults.conf syntax"],
)  # fmt: skip
def test_a_secret_in_a_jobs_spark_conf_is_refused_without_being_shown(spark_conf, message, tmp_path):
    # The settings go on spark-submit's command line and into the job's unit (mode 0644); the refusal names the
    # entry by its index, and the secret shows nowhere in what ansible-playbook printed, even at full verbosity.
    rc, out, result = run("streaming.yml", inventory(tmp_path, {"spark_conf": spark_conf}), tmp_path, "-vvv")
    assert rc != 0, out
    assert f"job 'etl': {message}" in out, out
    assert "hunter2-9f3" not in out + result.stdout
    assert refused_before_any_host(result), result.recap


@pytest.mark.parametrize("state", ["stopped", ""])
def test_the_jobs_of_one_dc_run_under_a_limit_to_its_spark_host_and_the_first_broker(state, tmp_path):
    # The documented way to stop (or run) one DC's jobs: --limit 'dc2-spark,kafka_brokers[0]'. The jobs' settings
    # are read from the cluster's model on the first broker, which is never contacted, the jobs judged, and the run
    # goes on to dc2-spark alone (unreachable here: the control that it got there).
    extra = ("-e", f"stream_state={state}") if state else ()
    limit = "dc2-spark,kafka_brokers[0]"
    rc, out, result = run("streaming.yml", inventory(tmp_path), tmp_path, "--limit", limit, *extra)
    assert "is undefined" not in out, out
    judged = result.results(REFUSAL)
    assert [h for h, _ in judged] == ["dc2-spark"], out
    assert not [h for h, r in judged if r.get("failed")], out
    assert [h for h, s in result.recap.items() if s.get("unreachable")] == ["dc2-spark"], result.recap
    assert rc != 0  # dc2-spark points at a closed port
