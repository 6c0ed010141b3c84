"""The release guard and the features run on the deployed cluster (the whole upgrade: `make drill-upgrade`).

A cluster formatted by 4.3.1 has 4.3's features finalized from the start, so
features.yml finds nothing to raise, and site.yml refuses 4.2.0 before
touching any host: the rollback an operator may do only before finalizing.
"""

from testkit.cluster import playbook


def test_features_run_finds_a_cluster_formatted_at_its_release_finalized(cluster):
    run = playbook(cluster, "features")
    assert run.ok, run.text[-2000:]
    assert run.changed == 0, run.recap
    assert "raise nothing" in run.text, run.text[-2000:]


def test_an_older_release_than_the_finalized_features_is_refused_before_any_host_is_touched(cluster):
    # An operator names the older release with its archive's checksum; the guard refuses before any node fetches
    # it, so the testbed need not have built that archive.
    run = playbook(cluster, "site", kafka_node_version="4.2.0", kafka_node_archive_checksum="sha512:" + "0" * 128)
    assert not run.ok
    assert "kafka_node_version=4.2.0 on dc1-controller, " in run.text, run.text[-2000:]
    assert "the cluster's metadata.version is finalized at 4.3-IV" in run.text, run.text[-2000:]
    assert "Kafka 4.2.0 cannot read it" in run.text
    assert run.changed == 0, run.recap
