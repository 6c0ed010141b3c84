"""The streaming jobs of roles/spark_stream: entries made whole, and every reason a job cannot run, by its name."""

import zipfile

import pytest

from ansible_collections.stretch.kafka.plugins.filter.spark_config import wheel_modules
from ansible_collections.stretch.kafka.plugins.module_utils import acls
from ansible_collections.stretch.kafka.plugins.module_utils.stream_jobs import (
    JobError,
    grants,
    jobs,
    modules_of,
    problems,
)

DEFAULTS = {"state": "started", "session_timeout_ms": 6000, "heartbeat_interval_ms": 1000, "spark_conf": ["a=b"]}
FILE = "/srv/site/jobs/etl.py"
# What a job's user needs, as the kafka role declares it for kafka_stream_user.
ETL_ACLS = [
    {"principal": "User:etl", "resource": {"type": "topic", "name": "orders"}, "operations": ["read", "describe"]},
    {"principal": "User:etl", "resource": {"type": "group", "name": "orders-etl"},
     "operations": ["read", "describe", "describe_configs", "alter_configs"]},
]  # fmt: skip


def job(**entry):
    return {"name": "etl", "file": FILE, "group": "orders-etl", "topics": ["orders"], "user": "etl", **entry}


def judge(*entries, declared=ETL_ACLS, users=("etl",), super_users=(), modules=None, state=""):
    return problems(
        jobs(list(entries), DEFAULTS, state),
        users=list(users),
        declared_acls=declared,
        super_users=super_users,
        file_exists=lambda path: path == FILE,
        provided_modules=modules,
    )


def test_an_entry_is_made_whole_with_the_roles_defaults_and_its_unit():
    (made,) = jobs([job(args=["--fetch-stats"], session_timeout_ms=8000)], DEFAULTS)
    assert made == {
        "name": "etl", "file": FILE, "module": "", "args": ["--fetch-stats"], "group": "orders-etl",
        "topics": ["orders"], "user": "etl", "state": "started", "session_timeout_ms": 8000,
        "heartbeat_interval_ms": 1000, "spark_conf": ["a=b"], "unit": "spark-stream-etl",
    }  # fmt: skip
    assert jobs([job(state="started")], DEFAULTS, "stopped")[0]["state"] == "stopped", "stream_state wins"


def test_a_sound_job_passes():
    assert judge(job()) == []
    assert judge(job(file="", module="orders_etl.main"), modules={"orders_etl", "orders_etl.main"}) == []
    assert judge(job(file="", module="orders_etl.main"), modules=None) == [], "from an index: checked on the host"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"file": "/srv/site/jobs/gone.py"}, "job 'etl': its file /srv/site/jobs/gone.py is missing on the controller"),
        ({"file": "jobs/etl.py"}, "job 'etl': its file 'jobs/etl.py' must be an absolute path on the controller"),
        ({"file": "", "module": "orders_etl.main"}, "job 'etl': its module orders_etl.main is missing: no wheel"),
        ({"module": "orders_etl.main"}, "job 'etl': give it a file (a Python file on the Ansible controller) or a "),
        ({"file": "", "module": "orders-etl"}, "job 'etl': its module 'orders-etl' is not a Python module name"),
        ({"file": "", "module": "orders_etl.main\n"}, "job 'etl': its module 'orders_etl.main\\n' is not a Python"),
        ({"name": "ETL job"}, "job 'ETL job': its name must be lower-case letters, digits and dashes"),
        ({"name": "etl\n"}, "job 'etl\\n': its name must be lower-case letters, digits and dashes"),
        ({"group": ""}, "job 'etl': it needs a group"),
        ({"topics": "orders"}, "job 'etl': its topics must be a list of topic names"),
        ({"state": "running"}, "job 'etl': its state 'running' is not started or stopped"),
        ({"session_timeout_ms": 1000}, "job 'etl': its session_timeout_ms (1000) must be longer than"),
        ({"spark_conf": ["spark.authenticate.secret=x" * 3]}, "job 'etl': its spark_conf sets spark.authenticate"),
        (
            {"spark_conf": ["spark.ssl.keyStorePassword=x"]},
            "job 'etl': its spark_conf[0] (spark.ssl.keyStorePassword) holds a secret",
        ),
        ({"spark_conf": ["spark.ssl.keyStorePassword x"]}, "job 'etl': its spark_conf[0] is not KEY=VALUE"),
        ({"group": "orders\nUser=root"}, "job 'etl': its group holds a line break or another control character"),
        ({"topics": ["orders", "re funds"]}, "job 'etl': its topics[1] is not a topic name"),
        ({"topics": ["orders\n"]}, "job 'etl': its topics[0] is not a topic name"),
        ({"args": ["--ok", "a\nb"]}, "job 'etl': its args[1] holds a line break or another control character"),
        ({"user": "nobody"}, "job 'etl': its user 'nobody' is not declared in kafka_users"),
    ],
)
def test_a_job_that_could_not_run_is_refused_by_its_name(entry, message):
    found = judge(job(**entry), modules=set())
    matching = [p for p in found if p.startswith(message)]
    assert matching, found
    assert not any("User=root" in p or "re funds" in p for p in matching), "the refusal repeats the value"


def test_an_unknown_key_is_refused_at_once():
    with pytest.raises(JobError, match=r"spark_stream_jobs\[0\] \(etl\): unknown key\(s\) groups"):
        jobs([job(groups=["g"])], DEFAULTS)


def test_a_group_shared_by_two_jobs_and_a_name_used_twice_are_refused():
    found = judge(job(), job(name="etl-replay"), job(group="other"))
    assert any(p.startswith("group 'orders-etl' is shared by jobs 'etl', 'etl-replay': each job needs a group of its")
               for p in found), found  # fmt: skip
    assert any(p.startswith("name 'etl' is shared by jobs 'etl', 'etl'") for p in found), found


@pytest.mark.parametrize(
    ("declared", "lacking"),
    [
        ([], "lacks read on topic 'orders', describe on topic 'orders', read on group 'orders-etl', describe on "
             "group 'orders-etl', describe_configs on group 'orders-etl', alter_configs on group 'orders-etl'"),
        (ETL_ACLS[:1], "lacks read on group 'orders-etl', describe on group 'orders-etl', describe_configs"),
        (ETL_ACLS[1:], "lacks read on topic 'orders', describe on topic 'orders':"),
        ([*ETL_ACLS, {"principal": "User:etl", "resource": {"type": "topic", "name": "orders"}, "operations": ["read"],
                      "permission": "deny"}], "lacks read on topic 'orders':"),
        ([*ETL_ACLS[1:], {"principal": "User:etl", "resource": {"type": "topic", "name": "orders"},
                          "operations": ["read"], "host": "10.1.0.20"}], "lacks read on topic 'orders', describe"),
    ],
    ids=["none", "no group", "no topic", "a deny wins", "one host only"],
)  # fmt: skip
def test_a_job_whose_user_lacks_its_acls_is_refused_naming_what_it_lacks(declared, lacking):
    (found,) = judge(job(), declared=declared)
    assert found.startswith(f"job 'etl': its user 'etl' {lacking}"), found


def test_grants_follow_kafkas_authorizer():
    entries = acls.normalize([
        {"principal": "User:etl", "resource": {"type": "topic", "name": "ord", "pattern": "prefixed"},
         "operations": ["read"]},
        {"principal": "User:*", "resource": {"type": "group", "name": "*"}, "operations": ["all"]},
        {"principal": "User:etl", "resource": {"type": "group", "name": "g2"}, "operations": ["alter_configs"]},
    ])  # fmt: skip
    assert grants(entries, "User:etl", "topic", "orders", "read")
    assert grants(entries, "User:etl", "topic", "orders", "describe"), "read implies describe"
    assert not grants(entries, "User:etl", "topic", "refunds", "read")
    assert grants(entries, "User:other", "group", "anything", "alter_configs"), "User:* on every group, all"
    assert grants(entries, "User:etl", "group", "g2", "describe_configs"), "alter_configs implies describe_configs"


def test_a_super_user_or_a_cluster_without_authorizer_needs_no_acl():
    assert judge(job(), declared=[], super_users=["User:etl"]) == []
    assert judge(job(), declared=None) == []


def test_a_wheel_directory_tells_which_modules_it_holds(tmp_path):
    with zipfile.ZipFile(tmp_path / "orders_etl-1.0-py3-none-any.whl", "w") as wheel:
        for name in ("orders_etl/__init__.py", "orders_etl/main.py", "orders_etl-1.0.dist-info/METADATA"):
            wheel.writestr(name, "")
    assert wheel_modules(str(tmp_path)) == {"orders_etl", "orders_etl.main"}
    assert wheel_modules("") is None
    assert modules_of(["a/b/c.py", "a/__init__.py", "x.data/scripts/s.py", "top.py"]) == {"a.b.c", "a", "top"}
    (tmp_path / "broken.whl").write_text("not a zip")
    with pytest.raises(ValueError, match="broken.whl is not a readable wheel"):
        wheel_modules(str(tmp_path))
