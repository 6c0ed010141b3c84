"""Inventory validation rules, one bad topology per rule, and good ones that pass."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils.nodes import listener_record
from ansible_collections.stretch.kafka.plugins.module_utils.topology import (
    check_declarations,
    min_insync_problems,
    summary,
    validate,
)

GOOD_PROPS = {
    "default.replication.factor": "4",
    "offsets.topic.replication.factor": "4",
    "transaction.state.log.replication.factor": "4",
    "min.insync.replicas": "2",
    "transaction.state.log.min.isr": "2",
}


def node(host, node_id, dc, *roles, **props):
    return {
        "host": host,
        "node_id": node_id,
        "dc": dc,
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


def test_broker_without_dc_is_named():
    nodes = cluster()
    nodes[-1]["dc"] = ""
    msg = errors_for(nodes)
    assert "broker dc2-broker1 has no DC: set kafka_dc" in msg


def test_controller_without_dc_is_named():
    nodes = cluster()
    nodes[0]["dc"] = None
    assert "controller dc1-controller0 has no DC" in errors_for(nodes)


def test_controllers_without_a_dc_are_named_not_taken_for_missing():
    nodes = cluster()
    for n in nodes:
        if "controller" in n["roles"]:
            n["dc"] = ""
    msg = errors_for(nodes)
    assert "no controllers" not in msg
    assert (
        "the quorum's spread over DCs cannot be judged: controller(s) dc1-controller0, dc2-controller0, "
        "dc3-controller0 have no kafka_dc" in msg
    )


def test_a_dc_whose_controller_lacks_its_dc_is_not_judged_on_the_others_alone():
    # dc3's group sets no kafka_dc: its tiebreaker would otherwise vanish from
    # the quorum, which would read as a 1-1 quorum over two DCs.
    nodes = cluster()
    nodes[2]["dc"] = ""
    msg = errors_for(nodes)
    assert "controller(s) dc3-controller0 have no kafka_dc" in msg
    assert "controllers span 2 DC(s)" not in msg
    assert "holds 1 of 2 controller voters" not in msg


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
        "dc1-broker0: kafka_node_archive_url is set but kafka_node_archive_checksum is empty: set "
        "kafka_node_archive_checksum to the release's checksum ('sha512:...', from the .sha512 file published beside "
        "it) so a tampered download is refused"
    ]


def test_a_version_whose_checksum_the_collection_does_not_know_is_named():
    install = {"dc1-broker0": {"url": "https://x/k.tgz", "checksum": "", "archive": "kafka_2.13-4.9.9"}}
    (error,) = validate(cluster(), install)
    assert error.startswith(
        "dc1-broker0: the collection knows no published checksum of kafka_2.13-4.9.9 (kafka_node_version and "
        "kafka_node_scala_version; it knows kafka_2.13-4.3.1): set kafka_node_archive_checksum"
    )


def test_install_problem_is_reported_once_for_all_its_hosts():
    install = {f"h{i}": {"url": "https://x", "checksum": ""} for i in range(6)}
    errors = validate(cluster(), install)
    assert len(errors) == 1
    assert errors[0].startswith(
        "h0, h1, h2, h3 and 2 more: kafka_node_archive_url is set but kafka_node_archive_checksum is empty"
    )


def test_no_install_source_at_all():
    assert validate(cluster(), {"h": {"src": "", "url": "", "checksum": ""}}) == [
        "h: set kafka_node_archive_url (with kafka_node_archive_checksum) or kafka_node_archive_src"
    ]


def test_local_archive_needs_no_checksum():
    assert validate(cluster(), {"h": {"src": "/tmp/k.tgz", "url": "https://x", "checksum": ""}}) == []


def test_every_problem_is_reported_at_once():
    nodes = cluster(voters=(2, 1, 0))
    nodes[-1]["dc"] = ""
    assert len(validate(nodes)) >= 3


def test_summary_describes_the_split():
    assert summary(cluster(voters=(2, 2, 1))) == (
        "5 controller voters over 3 DCs (2-2-1: dc1=2, dc2=2, dc3=1); 4 brokers in dc1=2, dc2=2"
    )


# -- what Kafka would refuse at start, or what silently breaks a promise ----------------
LISTENERS = {"CONTROLLER": {"port": 9093, "protocol": "SSL"}, "CLIENT": {"port": 9092, "protocol": "SASL_SSL"}}


def with_endpoints(nodes):
    for n in nodes:
        port = 9093 if "controller" in n["roles"] else 9092
        n["listeners"] = {"X": listener_record("X", f"{n['host']}.example", {"port": port, "protocol": "SSL"})}
    return nodes


def test_dc_names_that_differ_only_in_case_are_refused():
    nodes = cluster(brokers_per_dc=(2, 2), voters=(1, 1, 1))
    nodes[0]["dc"] = "DC1"
    errors = validate(nodes)
    assert any("kafka_dc values differ only in case or spacing: 'DC1' (dc1-controller0); 'dc1'" in e for e in errors)


@pytest.mark.parametrize(
    "dc",
    ["dc1\nallow.everyone.if.no.acl.found=true", "dc1\n", "zürich", " dc1", "dc 1", "dc1#", "dc1=x", "dc1\\"],
    ids=[
        "a line break",
        "a trailing line break",
        "beyond ASCII",
        "a leading space",
        "a space",
        "a comment mark",
        "a separator",
        "a backslash",
    ],
)
def test_a_dc_name_outside_the_safe_set_is_refused_naming_the_host_and_the_value(dc):
    nodes = cluster()
    nodes[-1]["dc"] = dc
    errors = validate(nodes)
    assert (
        f"dc2-broker1: kafka_dc={dc!r} is not a DC name the roles can write: use letters, digits, '.', '_' and '-'"
        in " ".join(errors)
    ), errors


def test_dc_names_of_the_safe_set_pass():
    assert validate(cluster(dcs=("fra-1", "ams_2", "eu.west.3"))) == []


@pytest.mark.parametrize(
    "host", ["b1.dc1\nsuper.users=User:x", "b1.dc1\n", "[2001:db8::1]\n", "b1 dc1", "brøker", "b1:9092", "[2001:db8::1"]
)
def test_an_advertised_address_outside_the_safe_set_is_refused(host):
    nodes = with_endpoints(cluster())
    nodes[-1]["listeners"] = {"CLIENT": listener_record("CLIENT", host, {"port": 9092, "protocol": "SASL_SSL"})}
    assert f"dc2-broker1: its advertised address {host!r} (kafka_advertised_host, or the inventory name) is not" in (
        " ".join(validate(nodes))
    )


@pytest.mark.parametrize("host", ["b1.dc1.example", "10.0.1.11", "[2001:db8::1]", "b_1-x"])
def test_advertised_host_names_and_addresses_pass(host):
    nodes = with_endpoints(cluster())
    nodes[-1]["listeners"] = {"CLIENT": listener_record("CLIENT", host, {"port": 9092, "protocol": "SASL_SSL"})}
    assert validate(nodes) == []


def test_a_bind_host_outside_the_safe_set_is_refused():
    listeners = {"A": {"port": 9092, "protocol": "SSL", "bind_host": "0.0.0.0\nx=y"}}
    assert "kafka_listeners.A.bind_host='0.0.0.0\\nx=y' is not a host name" in " ".join(
        validate(cluster(), listeners=listeners)
    )
    assert validate(cluster(), listeners={"A": {"port": 9092, "protocol": "SSL", "bind_host": "[::]"}}) == []
    listeners = {"A": {"port": 9092, "protocol": "SSL", "bind_host": "0.0.0.0\n"}}
    assert "kafka_listeners.A.bind_host='0.0.0.0\\n' is not a host name" in " ".join(
        validate(cluster(), listeners=listeners)
    )


def test_a_host_in_two_dc_groups_is_ambiguous():
    nodes = cluster()
    groups = {
        "dc1": ["dc1-controller0", "dc1-broker0", "dc1-broker1", "dc2-broker1"],
        "dc2": ["dc2-broker0", "dc2-broker1"],
    }
    errors = validate(nodes, groups=groups)
    assert "dc2-broker1 is in the groups of 2 DCs (dc1, dc2): its DC is ambiguous" in " ".join(errors)


def test_a_host_in_another_dcs_group_is_ambiguous():
    groups = {"dc1": ["dc1-controller0", "dc1-broker0", "dc1-broker1", "dc2-broker1"]}
    errors = validate(cluster(), groups=groups)
    assert errors == [
        "dc2-broker1 is in the group of DC dc1 but its kafka_dc is 'dc2': its DC is ambiguous; "
        "set kafka_dc in one place"
    ]


@pytest.mark.parametrize(
    ("listeners", "message"),
    [
        ({"A": {"port": 9092, "protocol": "PLAINTEXT"}, "B": {"port": 9092, "protocol": "SSL"}},
         "kafka_listeners: A, B listen on the same port 9092"),
        ({"A": {"port": 70000, "protocol": "PLAINTEXT"}}, "kafka_listeners.A.port=70000 is not a port from 1 to 65535"),
        ({"A": {"port": 9092, "protocol": "TLS"}}, "kafka_listeners.A.protocol='TLS' is not one of PLAINTEXT, SSL"),
        ({"A-B": {"port": 9092, "protocol": "SSL"}}, "kafka_listeners.A-B: a listener name is letters, digits and '_'"),
        ({"A\n": {"port": 9092, "protocol": "SSL"}}, "kafka_listeners.A\n: a listener name is letters, digits and '_'"),
    ],
)  # fmt: skip
def test_listeners_kafka_refuses_at_start_are_refused(listeners, message):
    assert any(message in e for e in validate(cluster(), listeners=listeners))


def test_two_nodes_advertising_one_address_and_port_are_refused():
    nodes = with_endpoints(cluster())
    nodes[-1]["listeners"] = dict(nodes[-2]["listeners"])
    assert "dc2-broker0, dc2-broker1 all advertise dc2-broker0.example:9092" in " ".join(validate(nodes))


def test_an_unroutable_advertised_address_is_refused():
    nodes = with_endpoints(cluster())
    nodes[-1]["listeners"] = {"CLIENT": listener_record("CLIENT", "0.0.0.0", {"port": 9092, "protocol": "SASL_SSL"})}
    assert any("listener CLIENT would advertise 0.0.0.0:9092" in e for e in validate(nodes))


def test_a_node_id_beyond_kafkas_range_is_refused():
    nodes = cluster()
    nodes[-1]["node_id"] = 2**31
    assert f"kafka_node_id={2**31} is not an integer from 0 to 2147483647" in " ".join(validate(nodes))


@pytest.mark.parametrize(
    ("variable", "key", "owner"),
    [
        ("kafka_node_properties", "broker.rack", "kafka_dc"),
        ("kafka_node_broker_properties", "min.insync.replicas", "kafka_min_insync_replicas"),
        ("kafka_node_properties", "node.id", "kafka_node_id"),
        ("kafka_node_controller_properties", "process.roles", "the kafka_controllers and kafka_brokers groups"),
        ("kafka_node_properties", "unclean.leader.election.enable", "the roles (never unclean"),
        (
            "kafka_node_properties",
            "listener.name.client.ssl.client.auth",
            "kafka_listeners (the listener's properties)",
        ),
        ("kafka_node_broker_properties", "default.replication.factor", "kafka_replication_factor"),
    ],
)
def test_an_override_of_a_derived_setting_names_the_variable_that_owns_it(variable, key, owner):
    nodes = cluster()
    nodes[-1]["overrides"] = {variable: {key: "x"}}
    errors = validate(nodes)
    assert len(errors) == 1
    assert errors[0].startswith(f"dc2-broker1: {variable} sets {key}, which the roles derive from {owner}")


def test_other_overrides_are_fine():
    nodes = cluster()
    nodes[-1]["overrides"] = {"kafka_node_broker_properties": {"num.network.threads": 8}}
    assert validate(nodes) == []


def test_relative_or_missing_data_directories_are_refused():
    nodes = cluster()
    nodes[-1]["properties"]["log.dirs"] = "data/kafka"
    nodes[-2]["properties"]["log.dirs"] = ""
    errors = " ".join(validate(nodes))
    assert "dc2-broker1: 'data/kafka' is not an absolute path" in errors
    assert "dc2-broker0: kafka_node_log_dirs is empty" in errors


# -- min.insync.replicas of 1: only by the operator's opt-in ----------------------------------

ONE_REPLICA = "an acks=all write would be acknowledged by one replica alone and lost with its broker"


@pytest.mark.parametrize(
    "variable", ["kafka_min_insync_replicas", "kafka_ops_failover_min_insync_replicas", "kafka_admin_min_isr_target"]
)
def test_a_min_insync_replicas_of_one_is_refused_naming_its_variable_unless_accepted(variable):
    assert min_insync_problems({variable: 1}) == [
        f"{variable}=1: {ONE_REPLICA}; set it to 2 or more, or set kafka_min_insync_replicas_one_opt_in: true "
        "to accept that"
    ]
    assert min_insync_problems({variable: "1"}, opt_in=True) == []
    assert min_insync_problems({variable: 2}) == min_insync_problems({variable: 3}) == []


@pytest.mark.parametrize("value", [0, -1, "two", True])
def test_a_min_insync_replicas_below_one_is_refused_even_with_the_opt_in(value):
    assert min_insync_problems({"kafka_min_insync_replicas": value}, opt_in=True) == [
        f"kafka_min_insync_replicas={value!r} is not a positive whole number"
    ]


def test_the_inventory_and_the_declarations_judge_their_min_insync_replicas():
    assert f"kafka_min_insync_replicas=1: {ONE_REPLICA}" in " ".join(
        validate(cluster(), min_insync_replicas={"kafka_min_insync_replicas": 1})
    )
    assert validate(cluster(), min_insync_replicas={"kafka_min_insync_replicas": 1}, min_insync_opt_in=True) == []
    topic = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": 1}}]
    found = check_declarations(cluster(), topic, 4, [], None, min_insync_replicas={"kafka_admin_min_isr_target": 2})
    assert found == [
        f"kafka_topics: topic 'orders': min.insync.replicas=1: {ONE_REPLICA}; set it to 2 or more, or set "
        "kafka_min_insync_replicas_one_opt_in: true to accept that"
    ]
    assert check_declarations(cluster(), topic, 4, [], None, min_insync_opt_in=True) == []


# -- a topic's min.insync.replicas must be below its replication factor ----------

BLOCKS = "below its replication factor 4: "


@pytest.mark.parametrize(
    ("isr", "why"),
    [
        (4, "at 4, losing a single replica blocks every acks=all write"),
        (5, "at 5, no acks=all write is ever accepted"),
    ],
)
def test_a_topics_own_min_insync_replicas_at_or_above_its_replication_factor_is_refused_naming_it(isr, why):
    topic = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": isr}}]
    assert check_declarations(cluster(), topic, 4, [], None, cluster_min_insync_replicas=2) == [
        f"kafka_topics: topic 'orders': min.insync.replicas={isr} must be {BLOCKS}{why}"
    ]


def test_a_topic_inheriting_a_min_insync_replicas_at_its_replication_factor_is_refused_naming_where_it_comes_from():
    # Six brokers, RF 6 by default and a cluster-wide 5; one topic at RF 4 inherits 5.
    topic = [{"name": "orders", "partitions": 4, "replication_factor": 4}, {"name": "wide", "partitions": 4}]
    found = check_declarations(cluster((3, 3)), topic, 6, [], None, cluster_min_insync_replicas=5)
    assert found == [
        "kafka_topics: topic 'orders': min.insync.replicas=5 (the cluster's, kafka_admin_min_isr_target, which it "
        f"inherits) must be {BLOCKS}at 5, no acks=all write is ever accepted"
    ]


def test_a_topic_below_its_replication_factor_passes():
    topic = [{"name": "orders", "partitions": 4, "configs": {"min.insync.replicas": 3}}, {"name": "b", "partitions": 1}]
    assert check_declarations(cluster(), topic, 4, [], None, cluster_min_insync_replicas=2) == []
