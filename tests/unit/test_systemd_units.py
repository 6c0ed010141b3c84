"""The roles' systemd units read back, by systemd itself, as the values they were given.

systemd-analyze verify loads a unit as systemd would and, at debug level,
dumps what it parsed: the description, each environment assignment and
each command line. A value holding % (systemd's specifiers), $ (its
variables in command lines), quotes, backslashes or spaces must come out as
it went in, and one holding a line break must never reach a unit.
"""

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import jinja2
import pytest

from ansible_collections.stretch.kafka.plugins.filter.host_config import FilterModule
from ansible_collections.stretch.kafka.plugins.module_utils import systemd

REPO = Path(__file__).resolve().parents[2]
FILTERS = FilterModule().filters()
SPARK_STREAM_UNIT = REPO / "roles/spark_stream/templates/spark-stream.service.j2"
KAFKA_UNIT = REPO / "roles/kafka_node/templates/etc/systemd/system/kafka.service.j2"
# Everything a unit's syntax reads: specifiers, variables, both quotes, a backslash, spaces, a tab-free oddity.
AWKWARD = "team%iot $HOME ${USER} 'single' \"double\" back\\slash  two  spaces =equals; semi"
needs_systemd = pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")


def render(template, **variables):
    """A role's template rendered as Ansible renders it (trim_blocks), with the collection's filters."""
    env = jinja2.Environment(trim_blocks=True, undefined=jinja2.StrictUndefined)
    env.filters.update({f"stretch.kafka.{name}": f for name, f in FILTERS.items()})
    env.filters["quote"] = shlex.quote  # Ansible's
    return env.from_string(template.read_text()).render(**variables)


def systemd_reads(text, directory, name="unit"):
    """What systemd parsed of the unit text: {"Description": str, "Environment": {name: value}, "Command Line":
    [argv of each command line, its $$ made $ as systemd does when it runs one]}."""
    unit = Path(directory) / f"{name}.service"
    unit.write_text(text)
    proc = subprocess.run(
        ["systemd-analyze", "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        env={**os.environ, "SYSTEMD_LOG_LEVEL": "debug"},
        check=False,
    )
    dump = proc.stdout + proc.stderr
    # Its own lines: a setting systemd could not parse (a bad quote, escape or specifier) names the file.
    complaints = [
        line
        for line in dump.splitlines()
        if f"{unit}:" in line or "bad unit file setting" in line or "does not match strict user/group name" in line
    ]
    assert complaints == [], complaints
    found = {"Description": None, "User": None, "Group": None, "Environment": {}, "Command Line": []}
    for line in dump.splitlines():
        key, sep, value = line.strip().partition(": ")
        if not sep:
            continue
        if key in ("Description", "User", "Group"):
            found[key] = value
        elif key == "Environment":
            env_name, _, env_value = value.partition("=")
            found["Environment"][env_name] = env_value
        elif key == "Command Line":
            found["Command Line"].append([word.replace("$$", "$") for word in dumped_words(value)])
    return found


def dumped_words(line):
    """The words of a command line as systemd's dump writes it (shell_maybe_quote: a word with special
    characters in double quotes, with \\, ", $ and ` escaped by a backslash)."""
    return [
        re.sub(r"\\(.)", r"\1", quoted) if quoted or not bare else bare
        for quoted, bare in re.findall(r'"((?:[^"\\]|\\.)*)"|(\S+)', line)
    ]


def spark_home(directory):
    """A Spark home whose spark-submit exists (verify checks every command's program)."""
    home = Path(directory) / "spark"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "spark-submit").write_text("#!/bin/sh\n")
    (home / "bin" / "spark-submit").chmod(0o755)
    return str(home)


def stream_unit(directory, **job):
    job = {
        "name": "etl",
        "unit": "spark-stream-etl",
        "group": "orders-etl",
        "topics": ["orders"],
        "session_timeout_ms": 6000,
        "heartbeat_interval_ms": 1000,
        "spark_conf": ["spark.cores.max=2"],
        "args": ["--fetch-stats"],
        **job,
    }
    return render(
        SPARK_STREAM_UNIT,
        spark_stream_job=job,
        spark_stream_dc="dc1",
        spark_stream_master_url="spark://10.0.1.20:7077",
        spark_stream_spark_user="root",
        spark_stream_spark_group="root",
        spark_stream_state_dir="/var/lib/spark-stream/etl",
        spark_stream_spark_home=spark_home(directory),
        spark_stream_bootstrap_servers="b1.dc1:9092,b2.dc1:9092",
        spark_stream_client_file="/opt/spark-stream/etl/client.properties",
        spark_stream_job_dir="/opt/spark-stream/etl",
        spark_stream_python="/opt/spark-stream/venv/bin/python",
        spark_stream_driver_host="10.0.1.20",
        spark_stream_restart_seconds=30,
    )


@needs_systemd
def test_a_streaming_jobs_group_topics_and_arguments_reach_the_job_as_they_were_given(tmp_path):
    text = stream_unit(
        tmp_path,
        group=AWKWARD,
        topics=["orders", "re%funds"],
        args=["--label", AWKWARD, "50%"],
        spark_conf=["spark.cores.max=2", f"spark.app.tag={AWKWARD}"],
    )
    read = systemd_reads(text, tmp_path, "spark-stream-etl")
    assert read["Environment"]["KAFKA_GROUP_ID"] == AWKWARD
    assert read["Environment"]["KAFKA_TOPICS"] == "orders,re%funds"
    assert read["Environment"]["KAFKA_CLIENT_RACK"] == "dc1"
    assert (read["User"], read["Group"]) == ("root", "root")
    assert AWKWARD in read["Description"]
    start = next(argv for argv in read["Command Line"] if argv[0].endswith("/bin/spark-submit"))
    assert start[-3:] == ["--label", AWKWARD, "50%"]
    assert f"spark.app.tag={AWKWARD}" in start
    assert start[start.index("--name") + 1] == "spark-stream-etl-dc1"


@pytest.mark.parametrize(
    "job",
    [
        {"group": "orders\nExecStartPre=/bin/touch /tmp/owned"},
        {"topics": ["orders", "refunds\nUser=root"]},
        {"args": ["--ok", "x\ny"]},
        {"spark_conf": ["spark.cores.max=2\nUser=root"]},
    ],
    ids=["group", "topic", "argument", "spark_conf"],
)
def test_a_line_break_never_reaches_a_streaming_jobs_unit(job, tmp_path):
    with pytest.raises(Exception, match="line break") as err:
        stream_unit(tmp_path, **job)
    assert "owned" not in str(err.value)
    assert "User=root" not in str(err.value)


@needs_systemd
def test_the_kafka_unit_reads_back_its_description_and_paths(tmp_path):
    config = tmp_path / "etc kafka"
    text = render(
        KAFKA_UNIT,
        kafka_this_node={"roles": ["broker"], "node_id": 101, "dc": "dc1"},
        kafka_node_user="root",
        kafka_node_group="root",
        kafka_node_config_dir="/etc/kafka",
        kafka_node_restart_inputs=["/etc/kafka/server.properties", "/etc/systemd/system/kafka.service"],
        kafka_node_app_log_dir="/var/log/kafka",
        kafka_node_nofile_limit=100000,
        kafka_node_stop_timeout=180,
    )
    read = systemd_reads(text, tmp_path, "kafka")
    assert read["Description"] == "Apache Kafka broker (node 101, DC dc1)"
    assert (read["User"], read["Group"]) == ("root", "root")
    assert read["Command Line"][-1][-1] == "/etc/kafka/server.properties"
    with pytest.raises(Exception, match="is not an absolute path of letters"):
        render(
            KAFKA_UNIT,
            kafka_this_node={"roles": ["broker"], "node_id": 101, "dc": "dc1"},
            kafka_node_user="root",
            kafka_node_group="root",
            kafka_node_config_dir=str(config),
            kafka_node_restart_inputs=[f"{config}/server.properties"],
            kafka_node_app_log_dir="/var/log/kafka",
            kafka_node_nofile_limit=100000,
            kafka_node_stop_timeout=180,
        )


# -- the escapes themselves ----------


@pytest.mark.parametrize("value", [AWKWARD, "$$", "\\", '"', "trailing\\", "two words", "semi;colon", ""])
def test_a_word_or_an_assignment_that_holds_syntax_is_quoted_whole(value):
    assert re.fullmatch(r'"(?:[^"\\]|\\.)*"', systemd.word(value))
    assert re.fullmatch(r'"(?:[^"\\]|\\.)*"', systemd.environment("X", value)) or value == ""


@pytest.mark.parametrize("value", ["orders-etl", "spark.cores.max=2", "spark://10.0.1.20:7077", "b1:9092,b2:9092"])
def test_a_value_that_holds_no_syntax_is_written_bare_as_before(value):
    # So a unit whose values were already safe reads as it did, and its service is not restarted for nothing.
    assert systemd.word(value) == value
    assert systemd.environment("X", value) == f"X={value}"
    assert systemd.word("50%") == "50%%"


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\x00b", "a\tb", "\n"])
def test_every_escape_refuses_a_control_character_naming_what_not_the_value(value):
    for escape in (systemd.text, systemd.word, systemd.path):
        with pytest.raises(systemd.UnitValueError, match="^the group holds a line break") as err:
            escape(value, "the group")
        assert value not in str(err.value)
    with pytest.raises(systemd.UnitValueError, match="^KAFKA_GROUP_ID holds a line break"):
        systemd.environment("KAFKA_GROUP_ID", value)


@pytest.mark.parametrize("value", ["relative/path", "/with space", "/per%cent", "/dollar$", "/quote'", ""])
def test_a_bare_path_holds_nothing_a_unit_or_a_shell_would_read(value):
    with pytest.raises(systemd.UnitValueError, match="is not an absolute path of letters"):
        systemd.path(value, "kafka_node_config_dir")
    assert systemd.path("/opt/kafka_2.13-4.3.1/libs+x@y", "p") == "/opt/kafka_2.13-4.3.1/libs+x@y"


@pytest.mark.parametrize("value", ['"kafka"', "kafka user", "ka%fka", "9kafka", "k" * 32])
def test_a_user_systemd_would_not_take_as_it_is_is_refused(value):
    with pytest.raises(systemd.UnitValueError, match="is not a user or group name systemd takes"):
        systemd.account(value, "kafka_node_user")
    assert systemd.account("kafka", "kafka_node_user") == "kafka"


SPARK_UNIT = REPO / "roles/spark/templates/spark.service.j2"


def spark_unit(directory, daemon="worker", **overrides):
    home = Path(directory) / "spark-home"
    (home / "bin").mkdir(parents=True, exist_ok=True)
    (home / "bin" / "spark-class").write_text("#!/bin/sh\n")
    (home / "bin" / "spark-class").chmod(0o755)
    settings = dict(spark_daemon=daemon, spark_daemons=["master", "worker"], spark_host="10.91.1.20",
                    spark_master_port=7077, spark_master_webui_port=8080, spark_worker_webui_port=8081,
                    spark_worker_cores=2, spark_worker_memory="2g", spark_work_dir="/var/lib/spark",
                    spark_daemon_properties="/etc/spark/daemon.properties", spark_master_url="spark://10.91.1.20:7077",
                    spark_user="root", spark_group="root", spark_home=str(home),
                    spark_daemon_memory="512m")  # fmt: skip
    return render(SPARK_UNIT, **{**settings, **overrides})


@needs_systemd
def test_the_spark_unit_reads_back_its_daemon_s_arguments(tmp_path):
    read = systemd_reads(spark_unit(tmp_path, spark_worker_memory="2g 50%"), tmp_path, "spark-worker")
    assert read["Description"] == "Spark standalone worker (10.91.1.20, joins spark://10.91.1.20:7077)"
    assert read["Environment"]["SPARK_DAEMON_MEMORY"] == "512m"
    (start,) = read["Command Line"]
    assert start[1:] == [
        "org.apache.spark.deploy.worker.Worker", "--host", "10.91.1.20", "--webui-port", "8081", "--cores", "2",
        "--memory", "2g 50%", "--work-dir", "/var/lib/spark/work", "--properties-file",
        "/etc/spark/daemon.properties", "spark://10.91.1.20:7077",
    ]  # fmt: skip


def test_a_line_break_never_reaches_a_spark_unit(tmp_path):
    with pytest.raises(Exception, match="line break"):
        spark_unit(tmp_path, spark_host="10.91.1.20\nUser=root")


def test_free_text_ending_in_a_backslash_is_refused_as_systemd_would_join_the_next_line():
    with pytest.raises(systemd.UnitValueError, match="ends in a backslash"):
        systemd.text("the job of team x\\", "spark_stream_jobs[0].name")
    assert systemd.text("a\\b") == "a\\b"
