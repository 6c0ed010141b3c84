"""Topics and quotas as code, through playbooks/topics.yml and playbooks/quotas.yml, against the cluster.

The state is read back with confluent-kafka, not with the modules' own client.
"""

import json
import re
import time

import pytest
import yaml
from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from ansible_collections.stretch.kafka.plugins.module_utils import placement
from testkit.cluster import create_topic, playbook, wait_until
from testkit.playbook import run

ORDERS = {"name": "it-orders", "partitions": 6, "configs": {"retention.ms": 3600000, "cleanup.policy": "delete"}}
ORDERS8 = ORDERS | {"partitions": 8}  # once the growth test has run
THROTTLES = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")


@pytest.fixture(scope="module")
def admin(cluster):
    return AdminClient({"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config})


@pytest.fixture(scope="module")
def by_dc(cluster):
    grouped = {}
    for broker in cluster.brokers:
        grouped.setdefault(broker.dc, []).append(broker.node_id)
    return grouped


def delete_test_topics(admin):
    names = [t for t in admin.list_topics(timeout=30).topics if t.startswith("it-")]
    if names:
        for future in admin.delete_topics(names, operation_timeout=30).values():
            future.result()
        wait_until(lambda: not any(t.startswith("it-") for t in admin.list_topics(timeout=30).topics), 60, 1)


@pytest.fixture(scope="module", autouse=True)
def clean(cluster, admin):
    delete_test_topics(admin)
    yield
    delete_test_topics(admin)
    playbook(cluster, "quotas", kafka_quotas=[], kafka_admin_remove_undeclared_quotas=True)


def replicas(admin, topic):
    described = admin.describe_topics(TopicCollection([topic]))[topic].result()
    return {p.id: ([r.id for r in p.replicas], p.leader.id) for p in described.partitions}


def topic_configs(admin, topic):
    entries = admin.describe_configs([ConfigResource("topic", topic)])
    configs = next(iter(entries.values())).result()
    return {k: c.value for k, c in configs.items() if c.source == 1}  # DYNAMIC_TOPIC_CONFIG


def cluster_defaults(cluster, hosts):
    """The cluster-wide dynamic broker configs, as Kafka's own kafka-configs describes them (its text)."""
    return hosts[cluster.brokers[0].host].check_output(
        f"kafka-configs --bootstrap-server {cluster.brokers[0].address}:{cluster.admin_port}"
        " --command-config /etc/kafka/client.properties --entity-type brokers --entity-default --describe"
    )


def cluster_rates(cluster, hosts):
    """The replication throttle's rates set as cluster-wide defaults (what every broker applies)."""
    return dict(
        re.findall(r"\b((?:leader|follower)\.replication\.throttled\.rate)=(\d+)", cluster_defaults(cluster, hosts))
    )


def broker_rates(admin, cluster):
    found = {}
    for broker in cluster.brokers:
        configs = next(iter(admin.describe_configs([ConfigResource("broker", str(broker.node_id))]).values())).result()
        found[broker.node_id] = {
            k: configs[k].value for k in RATES if k in configs and configs[k].source == 2
        }  # DYNAMIC_BROKER
    return found


def snapshot(admin, cluster):
    names = sorted(t for t in admin.list_topics(timeout=30).topics if not t.startswith("__"))
    client = cluster.admin()
    try:
        quotas = client.quotas()
    finally:
        client.close()
    return {n: (replicas(admin, n), topic_configs(admin, n)) for n in names}, quotas


def load_of_the_others(admin, name):
    """What every topic but name puts on each broker, read with confluent-kafka: what the topic is placed against."""
    names = [t for t in admin.list_topics(timeout=30).topics if t != name]
    return placement.cluster_load({p: r for p, (r, _) in replicas(admin, t).items()} for t in names)


def test_declared_topics_get_the_exact_dc_grouped_replica_lists_and_preferred_leaders(cluster, admin, by_dc):
    load = load_of_the_others(admin, "it-orders")
    proc = playbook(cluster, "topics", kafka_topics=[ORDERS])
    assert proc.returncode == 0, proc.text[-3000:]
    rack = {b.node_id: b.dc for b in cluster.brokers}
    created = {p: r for p, (r, _) in replicas(admin, "it-orders").items()}
    assert created == placement.place(by_dc, 4, 6, load=load)
    for name, partitions in (("it-orders", 6), ("smoke", 4)):
        found = replicas(admin, name)
        assert placement.violations({p: r for p, (r, _) in found.items()}, by_dc) == []
        preferred = [rack[r[0]] for r, _ in found.values()]
        assert sorted(preferred.count(dc) for dc in by_dc) == [partitions // 2] * 2, f"{name}: {preferred}"
    # A new topic is led by its preferred leaders (older ones may have seen restarts).
    assert all(leader == r[0] for r, leader in replicas(admin, "it-orders").values())
    assert topic_configs(admin, "it-orders") == {"retention.ms": "3600000", "cleanup.policy": "delete"}
    assert playbook(cluster, "topics", kafka_topics=[ORDERS]).changed == 0


def test_config_drift_is_reported_in_check_mode_and_fixed_by_a_run(cluster, admin):
    resource = ConfigResource(
        "topic",
        "it-orders",
        incremental_configs=[
            ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("segment.ms", "100000", incremental_operation=AlterConfigOpType.SET),
        ],
    )
    next(iter(admin.incremental_alter_configs([resource]).values())).result()
    drifted = {"retention.ms": "1000", "segment.ms": "100000", "cleanup.policy": "delete"}
    assert wait_until(lambda: topic_configs(admin, "it-orders") == drifted, 30, 1)
    check = playbook(cluster, "topics", check=True, kafka_topics=[ORDERS])
    assert check.returncode == 0, check.text[-3000:]
    assert check.changed == 1
    assert "configs it-orders: set {'retention.ms': '3600000'}, remove ['segment.ms']" in check.text
    assert topic_configs(admin, "it-orders") == drifted, "check mode changed the topic"
    assert playbook(cluster, "topics", kafka_topics=[ORDERS]).changed == 1
    assert topic_configs(admin, "it-orders") == {"retention.ms": "3600000", "cleanup.policy": "delete"}


def test_growing_a_topic_places_the_new_partitions_and_moves_none(cluster, admin, by_dc):
    before = replicas(admin, "it-orders")
    load = load_of_the_others(admin, "it-orders")
    assert playbook(cluster, "topics", kafka_topics=[ORDERS8]).changed == 1
    after = replicas(admin, "it-orders")
    assert {p: after[p] for p in before} == before
    current = {p: r for p, (r, _) in before.items()}
    assert {p: r for p, (r, _) in after.items()} == placement.place(by_dc, 4, 8, current, load=load)


def test_a_topic_with_kafkas_placement_is_moved_onto_the_dc_grouped_one_and_no_throttle_stays(cluster, admin, by_dc):
    # Kafka's own placement at RF 3: racks alternate, so the first two replicas are in different DCs.
    create_topic(admin, "it-legacy", partitions=4, replication_factor=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", **cluster.client_config})
    for i in range(4000):
        producer.produce("it-legacy", value=b"x" * 512, key=str(i).encode())
    assert producer.flush(60) == 0
    before = {p: r for p, (r, _) in replicas(admin, "it-legacy").items()}
    assert placement.violations(before, by_dc), "Kafka's placement should break the DC rules"
    load = load_of_the_others(admin, "it-legacy")

    proc = playbook(cluster, "topics", kafka_topics=[ORDERS8, {"name": "it-legacy", "partitions": 4}])
    assert proc.returncode == 0, proc.text[-3000:]
    after = replicas(admin, "it-legacy")
    assert {p: r for p, (r, _) in after.items()} == placement.place(by_dc, 4, 4, before, load=load)
    assert placement.moved_replicas(before, {p: r for p, (r, _) in after.items()}) == 4, "one copy per partition"
    assert placement.violations({p: r for p, (r, _) in after.items()}, by_dc) == []
    assert all(leader == r[0] for r, leader in after.values())
    assert not any(k in THROTTLES for k in topic_configs(admin, "it-legacy")), "a throttle stayed on the topic"
    assert broker_rates(admin, cluster) == {b.node_id: {} for b in cluster.brokers}, "a throttle stayed on a broker"


def test_an_undeclared_topic_is_kept_unless_removal_is_asked_for(cluster, admin):
    create_topic(admin, "it-stray", partitions=1, replication_factor=4)
    declared = [ORDERS8, {"name": "it-legacy", "partitions": 4}]
    assert playbook(cluster, "topics", kafka_topics=declared).returncode == 0
    assert "it-stray" in admin.list_topics(timeout=30).topics
    others = [
        {"name": n, "partitions": len(t.partitions), "replication_factor": len(t.partitions[0].replicas)}
        for n, t in admin.list_topics(timeout=30).topics.items()
        if not n.startswith(("__", "it-"))
    ]
    proc = playbook(cluster, "topics", kafka_topics=declared + others, kafka_admin_remove_undeclared_topics=True)
    assert "delete it-stray" in proc.text, proc.text[-3000:]
    assert wait_until(lambda: "it-stray" not in admin.list_topics(timeout=30).topics, 60, 1)
    assert {"it-orders", "it-legacy", "smoke"} <= set(admin.list_topics(timeout=30).topics)


def layouts(admin):
    """{topic: {partition: [replicas]}} of every topic, the internal ones too."""
    return {
        name: {p: r for p, (r, _) in replicas(admin, name).items()} for name in admin.list_topics(timeout=30).topics
    }


def test_an_undeclared_topic_coming_and_going_between_two_converges_moves_nothing(cluster, admin, by_dc):
    # A topic declared while an undeclared one crowds some brokers is laid out against that load, so its lists
    # are not the ones it would get on an empty cluster. Once the undeclared topic is gone, the next converge must
    # leave every topic as it is: each list meets the placement's rules, and balancing existing topics happens
    # only when asked for (kafka_admin_balance_topics), never because of what other topics hold.
    first, second = sorted(by_dc)
    a, b = sorted(by_dc[first])[:2], sorted(by_dc[second])[:2]
    crowd = [[*a, *b], [*a, *b], [a[1], a[0], b[1], b[0]]]
    admin.create_topics([NewTopic("it-crowd", num_partitions=len(crowd), replica_assignment=crowd)])["it-crowd"].result(
        timeout=60
    )

    def whole():
        topic = admin.list_topics("it-crowd", timeout=10).topics.get("it-crowd")
        led = topic is not None and topic.error is None and [p.leader for p in topic.partitions.values()]
        return led and len(led) == len(crowd) and min(led) >= 0

    assert wait_until(whole, 60, 0.5), "it-crowd has no leader for every partition"
    declared = [*cluster.model["declared"]["topics"], {"name": "it-newcomer", "partitions": 7}]

    # The converge of the topics' concern (site.yml --tags topics: the preflight, then kafka_admin's topics run).
    laid_out = playbook(cluster, "site", "--tags", "topics", kafka_topics=declared)
    assert laid_out.ok, laid_out.text[-3000:]
    assert "create it-newcomer: 7 partitions, configs {}" in laid_out.text, laid_out.text[-3000:]
    for future in admin.delete_topics(["it-crowd"], operation_timeout=30).values():
        future.result()
    assert wait_until(lambda: "it-crowd" not in admin.list_topics(timeout=30).topics, 60, 1)

    before = layouts(admin)
    again = playbook(cluster, "site", "--tags", "topics", kafka_topics=declared)
    assert again.ok, again.text[-3000:]
    moved = [line for line in again.text.splitlines() if "reassign " in line]
    assert again.changed == 0, f"the second converge changed {again.recap}: {moved}"
    assert layouts(admin) == before


@pytest.mark.parametrize(
    ("name", "extra", "message"),
    [
        (
            "topics",
            {"kafka_topics": [{"name": "it-new", "partitions": 1}, ORDERS8 | {"configs": {"retention.msec": 1}}]},
            "topic 'it-orders': Unknown topic config name: retention.msec",
        ),
        (
            "topics",
            {"kafka_topics": [{"name": "it-new", "partitions": 1}, ORDERS8 | {"partitions": 2}]},
            "topic 'it-orders': partitions cannot go down from 8 to 2",
        ),
    ],
    ids=["unknown config key", "partition decrease"],
)  # fmt: skip
def test_what_only_the_cluster_can_refuse_fails_in_the_module_and_changes_nothing(cluster, admin, name, extra, message):
    # Preflight cannot know these (the broker's config keys, the current partition
    # count): the module must refuse them, before it changes anything.
    before = snapshot(admin, cluster)
    proc = playbook(cluster, name, **extra)
    assert proc.returncode != 0
    failed = [task["task"]["name"] for task in proc.tasks if any(r.get("failed") for r in task["hosts"].values())]
    assert len(failed) == 1
    assert failed[0].endswith("Bring the cluster's topics to the declared partitions, configs and DC-grouped placement")
    assert message in proc.text, proc.text[-3000:]
    assert snapshot(admin, cluster) == before


def call_module(cluster, tmp_path, module, args):
    """One module task on the Ansible controller, with no preflight in front of it."""
    play = [{"name": f"Call {module}", "hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": f"Call {module}", f"stretch.kafka.{module}": args}]}]  # fmt: skip
    path = tmp_path / f"{module}.yml"
    path.write_text(yaml.safe_dump(play))
    return run(cluster.inventory, str(path))


@pytest.mark.parametrize(
    ("module", "args", "message"),
    [
        # {wider}: one more than the inventory's brokers, {brokers}: how many it has.
        ("kafka_topics", {"topics": [{"name": "it-wide", "partitions": 1, "replication_factor": "{wider}"}]},
         "topic 'it-wide': replication factor {wider} is larger than the {brokers} brokers"),
        ("kafka_quotas", {"quotas": [{"entity": {"group": "it"}, "quotas": {"producer_byte_rate": 1}}]},
         "unknown entity type(s) ['group']"),
    ],
    ids=["RF larger than the brokers", "unknown quota entity type"],
)  # fmt: skip
def test_the_modules_refuse_bad_input_on_their_own_and_change_nothing(cluster, admin, tmp_path, module, args, message):
    # Preflight refuses these too (tests/preflight); here they reach the module itself.
    sizes = {"wider": len(cluster.brokers) + 1, "brokers": len(cluster.brokers)}
    args = {
        k: [{**t, "replication_factor": sizes["wider"]} for t in v] if k == "topics" else v for k, v in args.items()
    }
    message = message.format(**sizes)
    brokers = [{"node_id": n.node_id, "dc": n.dc} for n in cluster.brokers]
    # As the roles call them: the admin certificate on the admin listener.
    args = {"bootstrap_servers": cluster.admin_bootstrap_servers, "client_config": cluster.admin_config, **args}
    if module == "kafka_topics":
        args["brokers"] = brokers
    before = snapshot(admin, cluster)
    proc = call_module(cluster, tmp_path, module, args)
    assert proc.returncode != 0
    assert message in proc.text, proc.text[-3000:]
    assert snapshot(admin, cluster) == before


def produced_throttle_ms(cluster, client_id, records=500):
    """Produce records of 1 KiB as client_id; return the largest broker throttle time librdkafka reported."""
    seen = [0]

    def stats(raw):
        for broker in json.loads(raw)["brokers"].values():
            seen[0] = max(seen[0], broker["throttle"]["max"])

    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "client.id": client_id,
            "statistics.interval.ms": 200,
            "stats_cb": stats,
            **cluster.client_config,
        }
    )
    for _ in range(records):
        producer.produce("it-orders", value=b"q" * 1024)
    assert producer.flush(60) == 0
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        producer.poll(0.2)
    return seen[0]


def test_client_quotas_are_in_effect_and_reconciled_idempotently(cluster):
    quotas = [{"entity": {"client-id": "it-throttled"}, "quotas": {"producer_byte_rate": 20480}}]
    assert playbook(cluster, "quotas", kafka_quotas=quotas).changed == 1
    assert playbook(cluster, "quotas", kafka_quotas=quotas).changed == 0
    client = cluster.admin()
    try:
        assert client.quotas()[(("client-id", "it-throttled"),)] == {"producer_byte_rate": 20480.0}
    finally:
        client.close()
    # The quota reaches every broker's metadata in a moment, later on a busy machine: produce until it bites.
    throttled = wait_until(lambda: produced_throttle_ms(cluster, "it-throttled") > 0, timeout=60, interval=1)
    assert throttled, "the brokers did not throttle the quota's client in 60 s"
    assert produced_throttle_ms(cluster, "it-unthrottled") == 0


def test_the_replication_throttle_is_applied_cluster_wide_and_to_every_topic_and_removed(cluster, admin, hosts):
    rate = "5242880"
    present = playbook(
        cluster, "quotas", kafka_admin_replication_throttle="present", kafka_admin_replication_throttle_rate=int(rate)
    )
    assert present.returncode == 0, present.text[-3000:]
    assert present.changed == 1
    assert cluster_rates(cluster, hosts) == dict.fromkeys(RATES, rate)
    assert broker_rates(admin, cluster) == {b.node_id: {} for b in cluster.brokers}
    again = playbook(
        cluster, "quotas", kafka_admin_replication_throttle="present", kafka_admin_replication_throttle_rate=int(rate)
    )
    assert again.changed == 0, again.text[-3000:]
    for topic in ("smoke", "it-orders"):
        assert {k: v for k, v in topic_configs(admin, topic).items() if k in THROTTLES} == dict.fromkeys(THROTTLES, "*")
    absent = playbook(cluster, "quotas")
    assert absent.returncode == 0
    assert absent.changed == 1
    assert cluster_rates(cluster, hosts) == {}
    assert broker_rates(admin, cluster) == {b.node_id: {} for b in cluster.brokers}
    assert not any(k in THROTTLES for k in topic_configs(admin, "smoke"))
    assert playbook(cluster, "quotas").changed == 0


def cluster_min_isr(cluster, hosts):
    """The cluster-wide min.insync.replicas, as Kafka's own kafka-configs reports it."""
    found = re.search(r"min\.insync\.replicas=(\d+)", cluster_defaults(cluster, hosts))
    return int(found.group(1)) if found else None


def test_a_converge_puts_back_the_declared_cluster_wide_min_isr(cluster, hosts):
    # With Eligible Leader Replicas the controllers enforce the dynamic,
    # cluster-wide value, not server.properties: site.yml must own it.
    hosts[cluster.brokers[0].host].check_output(
        f"kafka-configs --bootstrap-server {cluster.brokers[0].address}:{cluster.admin_port}"
        " --command-config /etc/kafka/client.properties --entity-type brokers --entity-default"
        " --alter --add-config min.insync.replicas=1"
    )
    assert wait_until(lambda: cluster_min_isr(cluster, hosts) == 1, 30, 1)
    # The converge of the settings' concern (site.yml --tags settings).
    proc = playbook(cluster, "site", "--tags", "settings")
    assert proc.returncode == 0, proc.text[-3000:]
    assert "cluster-wide min.insync.replicas: 1 -> 2" in proc.text
    assert cluster_min_isr(cluster, hosts) == 2


def test_a_topics_run_during_a_recovery_leaves_the_recovery_throttle_as_it_was(cluster, admin, hosts):
    rate = 5242880
    create_topic(admin, "it-moved", partitions=2, replication_factor=3)
    assert playbook(
        cluster, "quotas", kafka_admin_replication_throttle="present", kafka_admin_replication_throttle_rate=rate
    ).ok
    try:
        proc = playbook(
            cluster, "topics", kafka_topics=[ORDERS8, {"name": "it-legacy", "partitions": 4},
                                             {"name": "it-moved", "partitions": 2}],
        )  # fmt: skip
        assert proc.returncode == 0, proc.text[-3000:]
        assert "reassign it-moved-0" in proc.text
        assert cluster_rates(cluster, hosts) == dict.fromkeys(RATES, str(rate))
        assert broker_rates(admin, cluster) == {b.node_id: {} for b in cluster.brokers}
        for topic in ("it-moved", "smoke"):
            assert {k: v for k, v in topic_configs(admin, topic).items() if k in THROTTLES} == dict.fromkeys(
                THROTTLES, "*"
            ), topic
    finally:
        assert playbook(cluster, "quotas").ok
