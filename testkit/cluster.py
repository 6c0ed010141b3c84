"""The cluster as an inventory describes it, read with Ansible's own inventory API, and helpers to use it.

It is the kafka role's compiled model (module_utils/model.py), built the way
the role builds it: the role's vars file's kafka_cluster, templated with the
inventory's groups, its hosts' variables and the role's defaults. The tests,
drills and tools take every node, bootstrap list and client setting from its
fields, and add only their own credentials, as the roles do; the integration
tests and the drills compare what the running cluster reports with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
from ansible.vars.manager import VariableManager
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.admin import KafkaAdminClient

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import smoke_cluster_args
from ansible_collections.stretch.kafka.plugins.filter.spark_config import smoke_spark_files
from ansible_collections.stretch.kafka.plugins.module_utils import (
    cluster_settings,
    kafka_admin,
    model,
    nodes,
    quotas,
    security,
    spark_security,
)
from testkit import REPO
from testkit.playbook import run

CLUSTER_DEFAULTS = yaml.safe_load((REPO / "roles/kafka/defaults/main.yml").read_text())
# The kafka role's kafka_cluster: groups | stretch.kafka.cluster(hostvars, {the model's settings, by the role's
# variables}). Its settings are templated here as the role templates them; the filter is model.cluster.
KAFKA_CLUSTER = yaml.safe_load((REPO / "roles/kafka/vars/main.yml").read_text())["kafka_cluster"]
_CALL = re.fullmatch(
    r"\{\{\s*groups\s*\|\s*stretch\.kafka\.cluster\(hostvars,\s*(\{.*\})\)\s*\}\}", KAFKA_CLUSTER, re.S
)
if _CALL is None:
    raise ImportError(
        "roles/kafka/vars/main.yml: kafka_cluster is no longer groups | stretch.kafka.cluster(hostvars, {...})"
    )
MODEL_SETTINGS = trust_as_template("{{ " + _CALL.group(1) + " }}")
# What node_records reads of each host, and what Ansible needs to reach it.
NODE_VARS = (
    "kafka_node_id", "kafka_dc", "kafka_advertised_host", "testbed_subnet", "testbed_release", "kafka_tls_principal"
)  # fmt: skip
SSH_VARS = ("ansible_host", "ansible_user", "ansible_ssh_private_key_file", "ansible_ssh_common_args")
# What a testbed Spark master is reached at, where its DC's executors reach this machine, and its cluster's
# secret (templated: the testbed's secrets are lookups).
SPARK_VARS = ("kafka_dc", "testbed_ip", "testbed_gateway", "testbed_subnet", "spark_auth_secret")
SPARK_MASTER_PORT = 7077  # roles/spark's spark_master_port


@dataclass(frozen=True)
class Node:
    host: str
    node_id: int
    dc: str
    roles: tuple
    address: str
    ssh: dict
    network: str | None = None  # the testbed network of its DC
    release: str | None = None  # the Debian release of its testbed image (bookworm, trixie)

    def testinfra_spec(self):
        """testinfra.get_host arguments that reach this node as Ansible does: as its user, becoming root with sudo
        when that is not root (the tests read what only root may)."""
        user = self.ssh.get("ansible_user")
        target = f"{user}@{self.ssh['ansible_host']}" if user else self.ssh["ansible_host"]
        kwargs = {"ssh_extra_args": self.ssh.get("ansible_ssh_common_args") or None, "sudo": user not in (None, "root")}
        if self.ssh.get("ansible_ssh_private_key_file"):
            kwargs["ssh_identity_file"] = self.ssh["ansible_ssh_private_key_file"]
        return f"ssh://{target}", kwargs


@dataclass(frozen=True)
class Cluster:
    inventory: str
    model: dict  # the kafka role's kafka_cluster (module_utils/model.py)
    nodes: tuple
    # librdkafka settings of each SCRAM user (the tests connect as kafka-verify,
    # a super user; the load harness as kafka-load): the model's client
    # settings with that user's credentials, as the roles' clients add theirs.
    user_configs: dict
    test_user: str = "kafka-verify"
    # Each broker DC's Spark standalone cluster on the testbed:
    # {dc: {master, host (its address), driver_host, network, secret, ssh, hosts (its workers' addresses)}}.
    spark: dict = None
    spark_conf: tuple = ()  # kafka_smoke_spark_conf: what each read may take of its cluster

    def spark_args(self, directory, dcs=None):
        """The smoke test's arguments that run each DC's read (of dcs, default all) on that DC's Spark
        cluster, with the bytes that cross into its reading hosts counted (what examples/consumer/inventory gives
        playbooks/smoke_test.yml); each cluster's settings and secret go into a private file in directory, as the
        kafka_smoke role writes them."""
        dcs = self.dcs if dcs is None else dcs
        clusters = {}
        for dc in dcs:
            clusters[dc] = {
                "master": self.spark[dc]["master"],
                "conf": [f"spark.driver.host={self.spark[dc]['driver_host']}"],
                "secret": self.spark[dc]["secret"],
                "network": self.spark[dc]["network"],
                "hosts": self.spark[dc]["hosts"],
            }
        for file in smoke_spark_files(clusters, "local[2]", ""):
            private_file(Path(directory) / file["name"], file["content"])
        args = smoke_cluster_args(clusters, str(directory))
        # Every DC's network, read or not: the bytes that cross from any of them count.
        args += [f"--dc-network={dc}={self.spark[dc]['network']}" for dc in sorted(set(self.spark) - set(dcs))]
        return [*args, *(f"--spark-conf={conf}" for conf in self.spark_conf)]

    def spark_properties_file(self, directory, dc, name=None, secret=None, extra=None):
        """A Spark settings file (mode 0600) for an application on dc's cluster, as the roles write it: its
        security settings with that cluster's secret (or secret), then extra ({key: value}); its path."""
        master = self.spark[dc]["master"]
        settings = {**spark_security.properties(secret or self.spark[dc]["secret"], "application", master)}
        settings.update(extra or {})
        return private_file(Path(directory) / (name or f"spark-{dc}.properties"), spark_security.render(settings))

    @property
    def records(self):
        return tuple(self.model["nodes"])

    def port(self, purpose):
        """The port of the listener for purpose: controller, inter_broker, client or admin."""
        return int(self.model["listener"][purpose]["port"])

    @property
    def client_port(self):
        return self.port("client")

    @property
    def controller_port(self):
        return self.port("controller")

    @property
    def admin_port(self):
        return self.port("admin")

    @property
    def replication_port(self):
        return self.port("inter_broker")

    @property
    def metrics_port(self):
        """Every node's Prometheus JMX exporter."""
        return int(self.model["metrics_port"])

    @property
    def admin_config(self):
        """kafka-python settings of the admin identity (the admin certificate) for admin-protocol reads."""
        return self.model["admin"]["client_config"]

    def client_settings(self, dc, user=None):
        """A client's settings in dc (librdkafka): the model's for that DC (bootstrap.servers, client.rack, the
        transport) with user's credentials (default the tests' own) on top."""
        return {**self.model["clients"][dc], **self.user_configs[user or self.test_user]}

    def dc_bootstrap_servers(self, dc):
        """dc's own brokers on the client listener."""
        return self.model["dcs"][dc]["bootstrap_servers"]

    @property
    def brokers(self):
        return [n for n in self.nodes if "broker" in n.roles]

    @property
    def controllers(self):
        return [n for n in self.nodes if "controller" in n.roles]

    @property
    def dcs(self):
        """The broker DCs, sorted."""
        return sorted({n.dc for n in self.brokers})

    @property
    def controller_dcs(self):
        """Every DC that holds a controller, sorted."""
        return sorted({n.dc for n in self.controllers})

    @property
    def tiebreakers(self):
        """The controllers in a DC without brokers (the tiebreaker DC's), in inventory order."""
        return [n for n in self.controllers if n.dc not in self.dcs]

    @property
    def client_config(self):
        """The tests' own client settings (librdkafka), as a super user on the client listener."""
        return self.user_configs[self.test_user]

    def client_config_file(self, directory, user=None):
        """A user's client settings as a key=value file of mode 0600 in directory: how tools are given secrets."""
        config = self.user_configs[user or self.test_user]
        text = "".join(f"{k}={v}\n" for k, v in sorted(config.items()))
        return private_file(Path(directory) / f"{user or self.test_user}.properties", text)

    def secrets(self):
        """{what: value} of every secret the inventory gives the cluster: the SCRAM users' passwords and each
        DC's Spark cluster's secret.

        On the testbed they are made by the inventory's password lookups, so
        these are the values in testbed/dist/secrets too.
        """
        scram = {
            f"{user}'s SCRAM password": config["sasl.password"]
            for user, config in sorted(self.user_configs.items())
            if config.get("sasl.password")
        }
        spark = {
            f"{dc}'s Spark cluster secret": cluster["secret"]
            for dc, cluster in sorted((self.spark or {}).items())
            if cluster.get("secret")
        }
        return {**scram, **spark}

    def private_key_files(self):
        """The private keys kafka_pki_dir holds on this machine: the CAs' (current, next, retired) and the admin's."""
        return sorted(Path(self.admin_config["ssl_cafile"]).parent.glob("*.key"))

    def admin(self, timeout=30):
        """The roles' own admin-protocol client, with the admin certificate on the admin listener."""
        return kafka_admin.Admin(
            self.admin_bootstrap_servers, self.admin_config, timeout, bootstrap_controllers=self.bootstrap_controllers
        )

    @property
    def admin_bootstrap_servers(self):
        return self.model["admin"]["bootstrap_servers"]

    @property
    def bootstrap_servers(self):
        return self.model["bootstrap"]["client"]

    @property
    def bootstrap_controllers(self):
        return self.model["admin"]["bootstrap_controllers"]


def load(inventory=None):
    """The cluster an inventory describes: a path, or a list of paths layered in order (as playbook runs take)."""
    init_plugin_loader()  # the testbed's secrets are lookups (ansible.builtin.password)
    inventory = inventory or os.environ.get("STRETCH_INVENTORY", str(REPO / "examples/consumer/inventory"))
    loader = DataLoader()
    sources = [str(s) for s in inventory] if isinstance(inventory, (list, tuple)) else [str(inventory)]
    inv = InventoryManager(loader=loader, sources=sources)
    variables = VariableManager(loader=loader, inventory=inv)
    hostvars, settings, spark, workers = {}, dict(CLUSTER_DEFAULTS), {}, {}
    groups = inv.get_groups_dict()
    for host in inv.get_hosts():
        hv = dict(CLUSTER_DEFAULTS, **variables.get_vars(host=host))
        hv.setdefault("ansible_host", host.name)
        templar = Templar(loader=loader, variables=hv)
        hostvars[host.name] = {key: templar.template(hv[key]) for key in (*NODE_VARS, *SSH_VARS) if key in hv}
        if host.name in groups.get("spark_masters", []):
            dc, ip, gateway, subnet, secret = (templar.template(hv[key]) for key in SPARK_VARS)
            spark[dc] = {
                "master": f"spark://{ip}:{SPARK_MASTER_PORT}",
                "host": ip,
                "driver_host": gateway,
                "network": subnet,
                "secret": secret,
                "ssh": {key: hostvars[host.name][key] for key in SSH_VARS if key in hostvars[host.name]},
            }
        if host.name in groups.get("spark_workers", []):
            workers.setdefault(templar.template(hv["kafka_dc"]), []).append(templar.template(hv["testbed_ip"]))
        if host.name in groups.get(nodes.BROKERS_GROUP, []):
            settings = hv
    for dc, found in spark.items():
        found["hosts"] = sorted(workers.get(dc, []))
    compiled = compile_model(loader, settings, groups, hostvars)
    cluster_nodes = tuple(
        Node(
            host=r["host"],
            node_id=int(r["node_id"]),
            dc=r["dc"],
            roles=tuple(r["roles"]),
            address=r["advertised_host"],
            ssh={key: hostvars[r["host"]][key] for key in SSH_VARS if key in hostvars[r["host"]]},
            network=hostvars[r["host"]].get("testbed_subnet"),
            release=hostvars[r["host"]].get("testbed_release"),
        )
        for r in compiled["nodes"]
    )
    templar = Templar(loader=loader, variables=settings)
    user_configs = {
        user["name"]: security.librdkafka(
            {**compiled["client"], "username": user["name"], "password": user["password"]}
        )
        for user in templar.template(settings.get("kafka_users")) or []
    }
    return Cluster(
        inventory=inventory,
        model=compiled,
        nodes=cluster_nodes,
        user_configs=user_configs,
        spark=spark,
        spark_conf=tuple(templar.template(settings.get("kafka_smoke_spark_conf")) or ()),
    )


def compile_model(loader, variables, groups, hostvars):
    """The cluster model as the kafka role compiles it: model.cluster (the stretch.kafka.cluster filter) of the
    inventory's groups, every host's variables and the settings of the role's kafka_cluster, templated with a
    broker's variables (the role's defaults under the inventory's); a plain dict."""
    settings = Templar(loader=loader, variables=variables).template(MODEL_SETTINGS)
    return json.loads(json.dumps(model.cluster(groups, hostvars, settings)))


def private_file(path, text):
    """text in a file only this user can read (mode 0600 before it holds anything); its path."""
    path = Path(path)
    path.touch(mode=0o600)
    path.chmod(0o600)
    path.write_text(text)
    return path


def wait_until(check, timeout=90, interval=2):
    """Poll check() until it returns a truthy value; return its last result."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result or time.monotonic() > deadline:
            return result
        time.sleep(interval)


def _topic_with_records(cluster, records):
    """A new one-partition topic (RF 4) holding records acknowledged by acks=all; (its name, the client settings,
    an admin client)."""
    config = {"bootstrap.servers": cluster.bootstrap_servers, **cluster.client_config}
    admin = AdminClient(config)
    topic = f"verify-lag-{uuid.uuid4().hex[:8]}"
    create_topic(admin, topic, partitions=1, replication_factor=4)
    producer = Producer({**config, "acks": "all"})
    for i in range(records):
        producer.produce(topic, f"record {i}".encode())
    if producer.flush(30) != 0:
        raise RuntimeError(f"the records to {topic} were not acknowledged")
    return topic, config, admin


@contextlib.contextmanager
def committed_group(cluster, delete_topic=True):
    """A consumer group with one committed offset and no member, as long as the block runs, then deleted with its
    topic (unless delete_topic is false): a group the cluster's exporter reports (lag and members per DC, 0 each) on
    a testbed that has none.

    Kafka 4.3.1 keeps a stale entry in its controllers' index of eligible leader replicas when a change of
    min.insync.replicas clears a partition's non-empty ELR (a ClearElrRecord), and once that topic is deleted every
    controller fails the registration of the brokers the ELR listed ("Topic ID ... existed in isrMembers, but not
    in the topics map"), from then on. A topic that lived through the failover drill's strict setting is kept."""
    topic, config, admin = _topic_with_records(cluster, 1)
    group = f"verify-lag-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        msg = consumer.poll(30)
        if msg is None or msg.error() is not None:
            raise RuntimeError(f"the record of {topic} was not read: {msg and msg.error()}")
        consumer.commit(message=msg, asynchronous=False)
    finally:
        consumer.close()
    try:
        yield group
    finally:
        admin.delete_consumer_groups([group])[group].result(timeout=30)
        if delete_topic:
            admin.delete_topics([topic])[topic].result(timeout=30)


@contextlib.contextmanager
def uncommitted_group(cluster, records=50, timeout=60):
    """A consumer group whose one member owns a partition holding records and never commits, as long as the block
    runs (a job stuck before its first commit); then the member leaves and the group and its topic are deleted.
    Yields (the group, its topic)."""
    topic, config, admin = _topic_with_records(cluster, records)
    group = f"verify-uncommitted-{uuid.uuid4().hex[:8]}"
    consumer = Consumer({**config, "group.id": group, "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    stop = threading.Event()

    def stay():  # the member polls (it reads, never commits) so that it stays in the group
        while not stop.is_set():
            consumer.poll(1)

    member = threading.Thread(target=stay, daemon=True)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while not consumer.assignment():
            if time.monotonic() > deadline:
                raise RuntimeError(f"the member of {group} was assigned no partition of {topic} in {timeout} s")
            consumer.poll(1)
        member.start()
        yield group, topic
    finally:
        stop.set()
        if member.is_alive():
            member.join(timeout=10)
        consumer.close()
        admin.delete_consumer_groups([group])[group].result(timeout=30)
        admin.delete_topics([topic])[topic].result(timeout=30)


def create_topic(admin, name, partitions, replication_factor, timeout=60):
    """Create a topic with Kafka's own placement; return its metadata once every partition has a leader.

    CreateTopics answers once the controllers have committed the topic. A
    broker that has not applied that record yet answers Metadata for it with
    UNKNOWN_TOPIC_OR_PART and no partitions, so whoever reads the partition
    list straight after creating must wait until it is whole.
    """
    admin.create_topics([NewTopic(name, partitions, replication_factor)])[name].result(timeout=timeout)
    answers = []

    def whole():
        topic = admin.list_topics(name, timeout=10).topics.get(name)
        if topic is None or topic.error is not None:
            answers.append(str(topic.error) if topic is not None else "topic missing from the reply")
            return None
        leaders = [p.leader for p in topic.partitions.values()]
        if len(leaders) != partitions or min(leaders) < 0:
            answers.append(f"{len(leaders)} partitions, leaders {leaders}")
            return None
        return topic

    topic = wait_until(whole, timeout=timeout, interval=0.5)
    assert topic, f"topic {name}: the metadata never showed {partitions} partitions with leaders; last: {answers[-3:]}"
    return topic


def start_times(cluster, hosts):
    """Each node's kafka service start time: it changes when, and only when, the node restarts."""
    return {
        n.host: hosts[n.host].check_output("systemctl show kafka -p ExecMainStartTimestampMonotonic --value")
        for n in cluster.nodes
    }


def quorum_leader_id(cluster):
    """The node id of the controller that leads the quorum now (kafka-python's DescribeQuorum through a broker)."""
    admin = KafkaAdminClient(bootstrap_servers=cluster.admin_bootstrap_servers, **cluster.admin_config)
    try:
        return admin.describe_metadata_quorum()["topics"][0]["partitions"][0]["leader_id"]
    finally:
        admin.close()


def read_quorum(cluster, errors=None):
    """The quorum as the roles read it, with directory ids, from the controllers.

    None while no controller answers as the leader (one starting, an election
    under way); what it answered goes to errors, when given.
    """
    admin = cluster.admin(timeout=10)
    try:
        return admin.quorum()
    except kafka_admin.AdminError as exc:
        if errors is not None:
            errors.append(str(exc))
        return None
    finally:
        admin.close()


def left_after_recovery(cluster):
    """What a DC's recovery (dc_recovery.yml) puts right, read back through the admin protocol, where it is not:

        {"throttle": {"cluster-wide" | "broker ID" | "topic NAME": {config: value}},   the replication throttle
                                                                                       still set, where it is
         "min_insync_replicas": {"declared": n, "cluster_wide": value or None}}        when the cluster-wide
                                                                                       value is not the declared
    and {} when nothing is left. The throttle is judged as the kafka_quotas module removes it
    (quotas.throttle_plan "absent"), the setting as kafka_cluster_settings keeps it. Fails closed: a fenced
    broker, whose own rates cannot be read, is a QuotaError naming it; a config the cluster did not describe,
    an AdminError.
    """
    admin = cluster.admin(timeout=15)
    try:
        brokers = admin.broker_configs(quotas.throttle_brokers("absent", admin.brokers()))
        topics = admin.topic_configs(admin.topics())
        wide = admin.cluster_configs()
    finally:
        admin.close()
    remove = quotas.throttle_plan("absent", None, brokers, topics, wide)
    throttle = {f"broker {b}": {k: brokers[b][k] for k in c["delete"]} for b, c in remove["brokers"].items()}
    throttle.update({f"topic {t}": {k: topics[t][k] for k in c["delete"]} for t, c in remove["topics"].items()})
    if remove["cluster"]["delete"]:
        throttle["cluster-wide"] = {k: wide[k] for k in remove["cluster"]["delete"]}
    left = {"throttle": throttle} if throttle else {}
    declared = cluster.model["min_insync_replicas"]
    if cluster_settings.plan(cluster_settings.normalize({"min.insync.replicas": declared}), wide)["set"]:
        left["min_insync_replicas"] = {"declared": declared, "cluster_wide": wide.get("min.insync.replicas")}
    return left


def quorum_leader(cluster):
    """The inventory name of the controller that leads the quorum now."""
    leader = quorum_leader_id(cluster)
    return next(c.host for c in cluster.controllers if c.node_id == leader)


def assert_restart_order(cluster, order, leader):
    """A whole rolling restart: every node once, the controllers first with the quorum leader last, then the brokers."""
    controllers = len(cluster.controllers)
    assert sorted(order) == sorted(n.host for n in cluster.nodes), f"restarted {order}"
    assert set(order[:controllers]) == {c.host for c in cluster.controllers}, f"not controllers first: {order}"
    assert order[controllers - 1] == leader, f"the quorum leader {leader} was not the last controller: {order}"


def playbook(cluster, name, *args, **kwargs):
    """Run playbooks/<name>.yml against the cluster's inventory (tests/playbook.py); returns its Run."""
    return run(cluster.inventory, name, *args, **kwargs)


def smoke_report_problems(cluster, report):
    """Why a smoke test's report (reports/smoke.json) does not prove each DC read locally, [] when it does.

    Each DC's read ran on that DC's Spark cluster, validated, at least 99% from its own DC's brokers and with at
    most 1% of its bytes crossing into the DC by the host's routed counters; the control read (no client.rack, on
    the first DC's cluster) was served about half from each DC, and the router saw that half cross.
    """
    first, second = cluster.dcs
    reads = {read["dc"]: read for read in report.get("reads", [])}
    problems = []
    for dc in (first, second):
        read = reads.get(dc)
        if read is None:
            problems.append(f"no read as {dc}")
            continue
        if read["master"] != cluster.spark[dc]["master"]:
            problems.append(f"{dc}'s read ran on {read['master']}, not its DC's {cluster.spark[dc]['master']}")
        if not read["validation"]["ok"] or read["locality_ratio"] < 0.99:
            problems.append(f"{dc}'s read: validation {read['validation']['ok']}, locality {read['locality_ratio']}")
        if read["crossed"]["dc"] != dc or read["crossed"]["share"] > 0.01:
            problems.append(f"{dc}'s read: what crossed into the DC {read['crossed']}")
    control = reads.get(None)
    if control is None:
        return [*problems, "no control read"]
    if control["master"] != cluster.spark[first]["master"] or not control["validation"]["ok"]:
        problems.append(f"the control read: master {control['master']}, validation {control['validation']['ok']}")
    if not 0.35 <= control["share_by_dc"][first] <= 0.65 or not 0.35 <= control["crossed"]["share"] <= 0.65:
        problems.append(f"the control read: shares {control['share_by_dc']}, crossed {control['crossed']}")
    elif control["crossed"]["bytes_by_pair"][f"{second}->{first}"] != control["crossed"]["bytes_in"]:
        problems.append(f"the control read: what crossed into {first} is not what {second} served {control['crossed']}")
    return problems
