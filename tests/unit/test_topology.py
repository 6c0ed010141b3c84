"""Inventory validation rules, one bad topology per rule, and good ones that pass."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.topology import summary, validate

GOOD_PROPS = {
    "default.replication.factor": "4",
    "offsets.topic.replication.factor": "4",
    "transaction.state.log.replication.factor": "4",
    "min.insync.replicas": "2",
    "transaction.state.log.min.isr": "2",
}


def node(host, node_id, rack, *roles, **props):
    return {
        "host": host,
        "node_id": node_id,
        "rack": rack,
        "roles": list(roles) or ["broker"],
        "properties": dict(GOOD_PROPS, **{k.replace("_", "."): v for k, v in props.items()}),
    }


def cluster(brokers_per_dc=(2, 2), voters=(1, 1, 1), dcs=("dc1", "dc2", "dc3")):
    nodes = []
    for i, count in enumerate(voters):
        for j in range(count):
            nodes.append(node(f"{dcs[i]}-controller{j}", i * 10 + j + 1, dcs[i], "controller"))
    for i, count in enumerate(brokers_per_dc):
        for j in range(count):
            nodes.append(node(f"{dcs[i]}-broker{j}", 100 * (i + 1) + j, dcs[i], "broker"))
    return nodes


@pytest.mark.parametrize(
    "shape",
    [
        {},
        {"voters": (2, 2, 1)},
        {"brokers_per_dc": (3, 3)},
        {"brokers_per_dc": (2, 5), "voters": (1, 1, 1)},
        {"dcs": ("fra", "ams", "ber")},
        {"voters": (1, 1, 1, 1, 1), "dcs": ("a", "b", "c", "d", "e")},
    ],
)
def test_good_topologies_pass(shape):
    assert validate(cluster(**shape)) == []


def test_combined_mode_node_counts_as_broker_and_voter():
    nodes = cluster(brokers_per_dc=(2, 2), voters=(0, 0, 1))
    for n in nodes:
        if n["host"] in ("dc1-broker0", "dc2-broker0"):
            n["roles"] = ["broker", "controller"]
    assert validate(nodes) == []


def errors_for(nodes):
    errors = validate(nodes)
    assert errors, "the bad inventory was accepted"
    return "\n".join(errors)


def test_fewer_than_three_controller_dcs():
    nodes = cluster(voters=(2, 1, 0))
    msg = errors_for(nodes)
    assert "controllers span 2 DC(s) (dc1, dc2)" in msg


def test_one_dc_holding_a_majority_of_voters():
    msg = errors_for(cluster(voters=(3, 1, 1)))
    assert "DC dc1 holds 3 of 5 controller voters (dc1-controller0, dc1-controller1, dc1-controller2)" in msg


def test_one_dc_holding_half_of_the_voters_also_loses_the_quorum():
    msg = errors_for(cluster(voters=(2, 1, 1)))
    assert "DC dc1 holds 2 of 4 controller voters" in msg
    assert "leaves 2, not a majority" in msg


@pytest.mark.parametrize("brokers", [(4,), (2, 2, 2)])
def test_brokers_in_other_than_two_dcs(brokers):
    msg = errors_for(cluster(brokers_per_dc=brokers))
    assert f"brokers must be in exactly 2 DCs, found {len(brokers)}" in msg


def test_broker_without_rack_is_named():
    nodes = cluster()
    nodes[-1]["rack"] = ""
    msg = errors_for(nodes)
    assert "broker dc2-broker1 has no rack: set kafka_rack" in msg


def test_controller_without_rack_is_named():
    nodes = cluster()
    nodes[0]["rack"] = None
    assert "controller dc1-controller0 has no rack" in errors_for(nodes)


def test_duplicate_node_ids_name_both_hosts():
    nodes = cluster()
    nodes[-1]["node_id"] = nodes[-2]["node_id"]
    assert "kafka_node_id 200 is used by more than one host: dc2-broker0, dc2-broker1" in errors_for(nodes)


@pytest.mark.parametrize("bad", [None, "", "eleven", -1, True])
def test_missing_or_malformed_node_id(bad):
    nodes = cluster()
    nodes[0]["node_id"] = bad
    assert "dc1-controller0: kafka_node_id" in errors_for(nodes)


@pytest.mark.parametrize("rf", ["3", "5"])
def test_replication_factor_that_cannot_put_two_replicas_in_each_dc(rf):
    nodes = cluster()
    for n in nodes:
        n["properties"]["default.replication.factor"] = rf
    msg = errors_for(nodes)
    assert f"default.replication.factor={rf} cannot put 2 replicas in each broker DC" in msg
    assert "between 4 and 4" in msg


def test_broker_dc_with_a_single_broker_cannot_hold_two_replicas():
    msg = errors_for(cluster(brokers_per_dc=(1, 3)))
    assert "dc1 has 1" in msg


def test_internal_topic_replication_factor_is_checked_too():
    nodes = cluster()
    nodes[-1]["properties"]["offsets.topic.replication.factor"] = "3"
    assert "dc2-broker1: offsets.topic.replication.factor=3" in errors_for(nodes)


@pytest.mark.parametrize("isr", ["4", "5"])
def test_min_insync_replicas_not_below_replication_factor(isr):
    nodes = cluster()
    nodes[-1]["properties"]["min.insync.replicas"] = isr
    assert f"dc2-broker1: min.insync.replicas={isr} must be below default.replication.factor=4" in errors_for(nodes)


def test_transaction_min_isr_not_below_its_replication_factor():
    nodes = cluster()
    nodes[-1]["properties"]["transaction.state.log.min.isr"] = "4"
    assert "transaction.state.log.min.isr=4 must be below transaction.state.log.replication.factor=4" in errors_for(
        nodes
    )


def test_url_install_needs_a_checksum():
    errors = validate(cluster(), {"dc1-broker0": {"url": "https://example.invalid/k.tgz", "checksum": ""}})
    assert errors == [
        "dc1-broker0: kafka_archive_url is set but kafka_archive_checksum is empty; give the release's checksum "
        "(e.g. 'sha512:...') so a tampered download is refused"
    ]


def test_install_problem_is_reported_once_for_all_its_hosts():
    install = {f"h{i}": {"url": "https://x", "checksum": ""} for i in range(6)}
    errors = validate(cluster(), install)
    assert len(errors) == 1
    assert errors[0].startswith(
        "h0, h1, h2, h3 and 2 more: kafka_archive_url is set but kafka_archive_checksum is empty"
    )


def test_no_install_source_at_all():
    assert validate(cluster(), {"h": {"src": "", "url": "", "checksum": ""}}) == [
        "h: set kafka_archive_url (with kafka_archive_checksum) or kafka_archive_src"
    ]


def test_local_archive_needs_no_checksum():
    assert validate(cluster(), {"h": {"src": "/tmp/k.tgz", "url": "https://x", "checksum": ""}}) == []


def test_every_problem_is_reported_at_once():
    nodes = cluster(voters=(2, 1, 0))
    nodes[-1]["rack"] = ""
    assert len(validate(nodes)) >= 3


def test_summary_describes_the_split():
    assert summary(cluster(voters=(2, 2, 1))) == (
        "5 controller voters over 3 DCs (2-2-1: dc1=2, dc2=2, dc3=1); 4 brokers in dc1=2, dc2=2"
    )
