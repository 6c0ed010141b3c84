"""testkit.cluster reaches the cluster as the roles do: its bootstrap lists and client settings are the kafka
role's compiled model (kafka_cluster), as a real ansible-playbook run compiles it from the same inventory."""

from types import SimpleNamespace

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.module_utils import quotas
from testkit import cluster as stretch_cluster
from testkit.playbook import run

# Two broker DCs and a tiebreaker controller, addresses apart from the inventory names, the admin client with
# settings of its own, two SCRAM users: every input the model reads beside the kafka role's defaults.
INVENTORY = {
    "all": {
        "vars": {
            "ansible_connection": "local",
            "kafka_users": [{"name": "kafka-verify", "password": "verify-pw"}, {"name": "kafka-load", "password": "l"}],
            "kafka_adminclient_config": {"request_timeout_ms": 45000},
            "kafka_tls_pki_dir": "/srv/pki",
        },
        "children": {
            "kafka_controllers": {
                "hosts": {
                    "c1": {"kafka_node_id": 1, "kafka_dc": "dc1", "kafka_advertised_host": "10.0.1.11"},
                    "c2": {"kafka_node_id": 2, "kafka_dc": "dc2", "kafka_advertised_host": "10.0.2.11"},
                    "c3": {"kafka_node_id": 3, "kafka_dc": "dc3", "kafka_advertised_host": "10.0.3.11"},
                }
            },
            "kafka_brokers": {
                "hosts": {
                    "b1": {"kafka_node_id": 11, "kafka_dc": "dc1", "kafka_advertised_host": "10.0.1.21"},
                    "b2": {"kafka_node_id": 12, "kafka_dc": "dc1", "kafka_advertised_host": "10.0.1.22"},
                    "b3": {"kafka_node_id": 21, "kafka_dc": "dc2", "kafka_advertised_host": "10.0.2.21"},
                    "b4": {"kafka_node_id": 22, "kafka_dc": "dc2", "kafka_advertised_host": "10.0.2.22"},
                }
            },
        },
    }
}

# The kafka role on one broker, handing its kafka_cluster back as data; nothing is connected to.
PLAYBOOK = [
    {
        "name": "The kafka role's compiled model",
        "hosts": "b1",
        "gather_facts": False,
        "roles": ["stretch.kafka.kafka"],
        "tasks": [
            {
                "name": "Hand back kafka_cluster",
                "ansible.builtin.set_stats": {"data": {"model": "{{ kafka_cluster }}"}, "per_host": False},
            }
        ],
    }
]


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """(testkit.cluster's Cluster, the kafka role's kafka_cluster) of one inventory."""
    directory = tmp_path_factory.mktemp("inventory")
    inventory, playbook = directory / "hosts.yml", directory / "model.yml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    playbook.write_text(yaml.safe_dump(PLAYBOOK, sort_keys=False))
    result = run(str(inventory), str(playbook), timeout=300)
    assert result.ok, result.stderr[-3000:] or result.output
    return stretch_cluster.load(str(inventory)), result.stats["model"]


def test_a_clients_settings_in_each_dc_are_the_roles_with_its_own_credentials(compiled):
    cluster, model = compiled
    assert sorted(model["clients"]) == cluster.dcs == ["dc1", "dc2"]
    for dc, settings in model["clients"].items():
        credentials = {"sasl.username": "kafka-verify", "sasl.password": "verify-pw"}
        assert cluster.client_settings(dc) == {**settings, **credentials}
        assert cluster.client_settings(dc, "kafka-load")["sasl.username"] == "kafka-load"
        # What a test adds to the bootstrap list and its own rack: the model's transport and its credentials.
        common = {k: v for k, v in settings.items() if k not in ("bootstrap.servers", "client.rack")}
        assert cluster.client_config == {**common, **credentials}


def test_the_bootstrap_lists_are_the_roles(compiled):
    cluster, model = compiled
    assert (
        cluster.bootstrap_servers
        == model["bootstrap"]["client"]
        == "10.0.1.21:9092,10.0.1.22:9092,10.0.2.21:9092,10.0.2.22:9092"
    )
    for dc, members in model["dcs"].items():
        assert cluster.dc_bootstrap_servers(dc) == members["bootstrap_servers"]
    assert cluster.dc_bootstrap_servers("dc2") == "10.0.2.21:9092,10.0.2.22:9092"
    assert cluster.admin_bootstrap_servers == model["admin"]["bootstrap_servers"]
    assert cluster.bootstrap_controllers == model["admin"]["bootstrap_controllers"]
    assert [n.address for n in cluster.controllers] == ["10.0.1.11", "10.0.2.11", "10.0.3.11"]


def test_the_admin_connection_is_the_roles_with_the_admin_clients_own_settings(compiled):
    cluster, model = compiled
    assert cluster.admin_config == model["admin"]["client_config"]
    assert cluster.admin_config["request_timeout_ms"] == 45000
    assert cluster.admin_config["ssl_certfile"] == "/srv/pki/admin.crt"


class ConfigsAdmin:
    """A stand-in for the roles' admin client: the dynamic configs a recovery cut short may leave."""

    def __init__(self, brokers=None, broker_configs=None, topic_configs=None, cluster_configs=None):
        self.registered = brokers or {1: {"dc": "dc1", "fenced": False}, 2: {"dc": "dc2", "fenced": False}}
        self.configs = {"broker": broker_configs or {}, "topic": topic_configs or {}}
        self.wide = cluster_configs if cluster_configs is not None else {"min.insync.replicas": "2"}
        self.closed = False

    def brokers(self):
        return self.registered

    def broker_configs(self, ids):
        return {b: self.configs["broker"].get(b, {}) for b in ids}

    def topics(self):
        return {"soak-x": {}, "load": {}}

    def topic_configs(self, names):
        return {t: self.configs["topic"].get(t, {}) for t in names}

    def cluster_configs(self):
        return self.wide

    def close(self):
        self.closed = True


def recovering(admin):
    return SimpleNamespace(admin=lambda timeout: admin, model={"min_insync_replicas": 2})


def test_nothing_left_after_a_recovery_reads_as_nothing_and_the_admin_client_is_closed():
    admin = ConfigsAdmin(
        topic_configs={"load": {"retention.ms": "1000"}}, broker_configs={1: {"log.cleaner.threads": "2"}}
    )
    assert stretch_cluster.left_after_recovery(recovering(admin)) == {}
    assert admin.closed


def test_the_throttle_left_on_a_broker_a_topic_or_cluster_wide_and_a_relaxed_min_isr_are_read_back():
    rate = {"leader.replication.throttled.rate": "1048576", "follower.replication.throttled.rate": "1048576"}
    admin = ConfigsAdmin(
        broker_configs={2: {"follower.replication.throttled.rate": "1048576", "log.cleaner.threads": "2"}},
        topic_configs={"soak-x": {"leader.replication.throttled.replicas": "*", "retention.ms": "1000"}},
        cluster_configs={**rate, "min.insync.replicas": "1"},
    )
    assert stretch_cluster.left_after_recovery(recovering(admin)) == {
        "throttle": {
            "broker 2": {"follower.replication.throttled.rate": "1048576"},
            "topic soak-x": {"leader.replication.throttled.replicas": "*"},
            "cluster-wide": rate,
        },
        "min_insync_replicas": {"declared": 2, "cluster_wide": "1"},
    }
    unset = ConfigsAdmin(cluster_configs={})
    assert stretch_cluster.left_after_recovery(recovering(unset)) == {
        "min_insync_replicas": {"declared": 2, "cluster_wide": None}
    }


def test_a_fenced_broker_whose_throttle_cannot_be_read_fails_closed():
    admin = ConfigsAdmin(brokers={1: {"dc": "dc1", "fenced": False}, 2: {"dc": "dc2", "fenced": True}})
    with pytest.raises(quotas.QuotaError, match="broker.s. 2 are fenced"):
        stretch_cluster.left_after_recovery(recovering(admin))
    assert admin.closed
