"""Each broker DC's Spark cluster found in the inventory: the smoke test's reads placed without naming a host."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.spark_sites import SiteError, clusters

BROKER_DCS = ["eqiad", "codfw"]


def inventory(**extra_hosts):
    """A second topology's Spark hosts (master and worker on one node per DC), as Ansible's groups and hostvars."""
    hostvars = {
        "spark-eqiad": {"kafka_dc": "eqiad", "ansible_host": "10.64.0.20", "spark_auth_secret": "s-eqiad",
                        "kafka_smoke_dc_network": "10.64.0.0/24"},
        "spark-codfw": {"kafka_dc": "codfw", "ansible_host": "10.192.0.20", "spark_auth_secret": "s-codfw",
                        "kafka_smoke_dc_network": "10.192.0.0/24"},
        **extra_hosts,
    }  # fmt: skip
    groups = {"spark_masters": ["spark-eqiad", "spark-codfw"], "spark_workers": ["spark-eqiad", "spark-codfw"]}
    return groups, hostvars


def test_each_dcs_master_secret_workers_and_network_come_from_its_hosts():
    groups, hostvars = inventory()
    assert clusters(groups, hostvars, "spark_masters", "spark_workers", BROKER_DCS) == {
        "codfw": {"master": "spark://10.192.0.20:7077", "secret": "s-codfw", "network": "10.192.0.0/24",
                  "hosts": ["10.192.0.20"]},
        "eqiad": {"master": "spark://10.64.0.20:7077", "secret": "s-eqiad", "network": "10.64.0.0/24",
                  "hosts": ["10.64.0.20"]},
    }  # fmt: skip


def test_a_second_worker_reads_for_its_dc_and_spark_host_wins_over_ansible_host():
    groups, hostvars = inventory(**{"worker2-eqiad": {"kafka_dc": "eqiad", "spark_host": "w2.eqiad.wmnet"}})
    groups["spark_workers"].append("worker2-eqiad")
    hostvars["spark-codfw"].update(spark_master_port=7177)
    found = clusters(groups, hostvars, "spark_masters", "spark_workers", BROKER_DCS)
    assert found["eqiad"]["hosts"] == ["10.64.0.20", "w2.eqiad.wmnet"]
    assert found["codfw"]["master"] == "spark://10.192.0.20:7177"


def test_no_spark_master_means_no_dc_clusters():
    assert clusters({"spark_masters": []}, {}, "spark_masters", "spark_workers", BROKER_DCS) == {}
    assert clusters({}, {}, "spark_masters", "spark_workers", BROKER_DCS) == {}


def test_a_dc_without_network_is_read_without_counting_what_crosses():
    groups, hostvars = inventory()
    for host in hostvars.values():
        del host["kafka_smoke_dc_network"]
    assert "network" not in clusters(groups, hostvars, "spark_masters", "spark_workers", BROKER_DCS)["eqiad"]


def no_codfw_master(groups, hostvars):
    groups["spark_masters"].remove("spark-codfw")


def two_eqiad_masters(groups, hostvars):
    hostvars["spark-codfw"]["kafka_dc"] = "eqiad"


def a_master_without_dc(groups, hostvars):
    del hostvars["spark-codfw"]["kafka_dc"]


def a_master_in_no_broker_dc(groups, hostvars):
    hostvars["spark-codfw"]["kafka_dc"] = "ulsfo"


def a_master_without_worker(groups, hostvars):
    groups["spark_workers"].remove("spark-codfw")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (no_codfw_master, "broker DC 'codfw' has no Spark master in spark_masters, though eqiad has one"),
        (two_eqiad_masters, "spark-eqiad and spark-codfw are both Spark masters of DC 'eqiad'"),
        (a_master_without_dc, "spark-codfw: a Spark master \\(spark_masters\\) without kafka_dc"),
        (a_master_in_no_broker_dc, "spark-codfw: a Spark master in DC 'ulsfo', which has no brokers"),
        (a_master_without_worker, "DC 'codfw' has a Spark master \\(spark-codfw\\) but no worker in spark_workers"),
    ],
)
def test_an_inventory_that_cannot_place_the_reads_is_refused_by_name(change, message):
    groups, hostvars = inventory()
    change(groups, hostvars)
    with pytest.raises(SiteError, match=message):
        clusters(groups, hostvars, "spark_masters", "spark_workers", BROKER_DCS)
