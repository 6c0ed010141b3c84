"""The checks against the cluster, on a fake admin client: what prepare() and the group member refuse."""

import pytest

from kafka_group_source import member
from kafka_group_source.checks import check_bootstrap, check_cluster
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
