"""The checks against the cluster, on a fake admin client: what prepare() and the group member refuse."""

import pytest

from kafka_group_source import member
from kafka_group_source.checks import check_bootstrap, check_cluster, check_driver, prepare
from kafka_group_source.options import SettingError, Settings


class Node:
    def __init__(self, rack):
        self.rack = rack


class MetaTopic:
    def __init__(self, error=None):
        self.error = error


class ClusterAdmin:
    def __init__(self, topics, racks):
        self.topics, self.racks = topics, racks

    def list_topics(self, timeout):
        return type("Metadata", (), {"topics": self.topics})()

    def describe_cluster(self, request_timeout):
        nodes = [Node(r) for r in self.racks]

        class Done:
            def result(self, timeout):
                return type("Cluster", (), {"nodes": nodes})()

        return Done()


def test_an_unknown_topic_and_a_dc_that_is_no_rack_are_named():
    admin = ClusterAdmin({"load": MetaTopic()}, ["dc1", "dc2", "dc1"])
    check_cluster(admin, ["load"], "dc2")
    with pytest.raises(SettingError, match="topic 'orders' does not exist"):
        check_cluster(admin, ["load", "orders"], "dc1")
    with pytest.raises(
        SettingError, match="client.rack 'fra1' is no broker's rack \\(the brokers' racks are: dc1, dc2\\)"
    ):
        check_cluster(admin, ["load"], "fra1")


@pytest.mark.parametrize("bootstrap", ["", "nohostport", "127.0.0.1:1"])
def test_a_bad_bootstrap_is_refused(bootstrap):
    with pytest.raises(SettingError):
        check_bootstrap(bootstrap, timeout=1)


def test_the_member_refuses_a_dc_that_is_no_rack_before_it_joins_the_group():
    joined = []
    settings = Settings(bootstrap_servers="b:1", topics=("load",), group="g", rack="fra1")
    with pytest.raises(SettingError, match="client.rack 'fra1' is no broker's rack"):
        member.member_for(settings, joined.append, lambda config: ClusterAdmin({"load": MetaTopic()}, ["dc1"]))
    assert joined == [], "a consumer was made for the group before the checks"


def test_the_driver_check_has_librdkafka_judge_the_client_settings_without_connecting(tmp_path):
    made = []

    def factory(config):
        made.append(config)
        from confluent_kafka import Consumer

        return Consumer(config)

    base = {"kafka.bootstrap.servers": "b:1", "subscribe": "a", "kafka.group.id": "g", "kafka.client.rack": "dc1"}
    check_driver(Settings.from_options(base), factory)
    assert [c.get("group.protocol") for c in made] == ["consumer", None], "the member's and the readers' settings"
    assert not any("bootstrap.servers" in c for c in made), "nothing connects"
    with pytest.raises(SettingError, match="option kafka.foo.bar: No such configuration property"):
        check_driver(Settings.from_options({**base, "kafka.foo.bar": "1"}))
    with pytest.raises(SettingError, match="option kafka.fetch.max.wait.ms \\(librdkafka's fetch.wait.max.ms\\)"):
        check_driver(Settings.from_options({**base, "kafka.fetch.max.wait.ms": "soon"}))
    with pytest.raises(SettingError, match="librdkafka's queue.buffering.max.ms\\): a producer setting"):
        check_driver(Settings.from_options({**base, "kafka.linger.ms": "5"}))
    config = tmp_path / "client.properties"
    config.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    with pytest.raises(SettingError, match="have no sasl.username or sasl.password"):
        check_driver(Settings.from_options({**base, "client.config": str(config)}))


def test_prepare_has_librdkafka_judge_the_client_settings_before_it_reaches_the_cluster():
    def no_admin(config):
        raise AssertionError("prepare reached for the cluster with settings librdkafka refuses")

    options = {"kafka.bootstrap.servers": "127.0.0.1:9", "subscribe": "a", "kafka.group.id": "g",
               "kafka.client.rack": "dc1", "kafka.foo.bar": "1"}  # fmt: skip
    with pytest.raises(SettingError, match="option kafka.foo.bar: No such configuration property"):
        prepare(options, admin_factory=no_admin)
