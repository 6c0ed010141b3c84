"""A job as a service: the deploying role's environment, the ready and stop files, and the exit status."""

import io

import pytest

from kafka_group_source import service
from kafka_group_source.options import SettingError

ENV = {
    "KAFKA_BOOTSTRAP_SERVERS": "b1:9093,b2:9093",
    "KAFKA_TOPICS": "orders,refunds",
    "KAFKA_GROUP_ID": "orders-etl",
    "KAFKA_CLIENT_RACK": "dc1",
    "KAFKA_CLIENT_CONFIG": "/etc/job/client.properties",
    "KAFKA_GROUP_SESSION_TIMEOUT_MS": "6000",
    "KAFKA_GROUP_HEARTBEAT_INTERVAL_MS": "1000",
    "SPARK_STREAM_STATE_DIR": "/var/lib/spark-stream/etl",
}


def test_the_environment_gives_the_sources_options():
    context = service.Context.from_environment(ENV)
    assert context.source_options() == {
        "kafka.bootstrap.servers": "b1:9093,b2:9093", "subscribe": "orders,refunds", "kafka.group.id": "orders-etl",
        "kafka.client.rack": "dc1", "client.config": "/etc/job/client.properties",
        "group.session.timeout.ms": "6000", "group.heartbeat.interval.ms": "1000",
    }  # fmt: skip
    assert context.checkpoint == "/var/lib/spark-stream/etl/checkpoint"
    bare = service.Context.from_environment({k: v for k, v in ENV.items() if "GROUP_" not in k or k.endswith("_ID")})
    assert "group.session.timeout.ms" not in bare.source_options()


def test_a_missing_variable_is_named():
    lacking = {k: v for k, v in ENV.items() if k not in ("KAFKA_GROUP_ID", "SPARK_STREAM_STATE_DIR")}
    with pytest.raises(SettingError, match="the environment lacks KAFKA_GROUP_ID, SPARK_STREAM_STATE_DIR"):
        service.Context.from_environment(lacking)


class Query:
    def __init__(self, ends_after=None, error=None):
        self.polls, self.ends_after, self.error, self.stopped = 0, ends_after, error, False

    def awaitTermination(self, timeout):  # noqa: N802  Spark's name
        self.polls += 1
        return self.ends_after is not None and self.polls >= self.ends_after

    def stop(self):
        self.stopped = True

    def exception(self):
        return self.error


def context(tmp_path):
    return service.Context.from_environment({
        **ENV, "SPARK_STREAM_STATE_DIR": str(tmp_path), "SPARK_STREAM_READY_FILE": str(tmp_path / "ready"),
        "SPARK_STREAM_STOP_FILE": str(tmp_path / "stop"),
    })  # fmt: skip


def test_the_query_runs_until_the_stop_file_and_ends_with_0(tmp_path):
    (tmp_path / "stop").touch()
    query = Query()
    assert service.serve(query, context(tmp_path), poll_seconds=0) == service.STOPPED
    assert (tmp_path / "ready").exists(), "the role waits for the ready file"
    assert query.stopped


def test_a_failed_query_ends_with_1_and_says_why(tmp_path):
    out = io.StringIO()
    query = Query(ends_after=3, error="KafkaError GROUP_AUTHORIZATION_FAILED")
    assert service.serve(query, context(tmp_path), poll_seconds=0, out=out) == service.FAILED
    assert query.polls == 3
    assert "the streaming query failed: KafkaError GROUP_AUTHORIZATION_FAILED" in out.getvalue()
