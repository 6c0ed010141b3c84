"""Inventory variables the roles would ignore are refused by name: typos, removed names, internal ones."""

import pytest

from ansible_collections.stretch.kafka.plugins.module_utils import variables
from testkit import REPO

DECLARED, INTERNAL, PRODUCED = variables.collection_variables(str(REPO))


def problems(names, own=()):
    return variables.problems({"dc1-broker1": names}, DECLARED, INTERNAL, own, PRODUCED)


def test_the_collection_declares_its_variables_and_knows_the_ones_it_computes():
    assert {"kafka_node_log_dirs", "kafka_topics", "spark_stream_jobs", "python_venv_index_packages"} <= DECLARED
    assert {"kafka_cluster", "kafka_this_node", "python_venv_install"} <= INTERNAL
    assert "kafka_cluster" not in PRODUCED
    assert not DECLARED & INTERNAL
    assert not set(variables.REMOVED) & DECLARED


@pytest.mark.parametrize(
    ("typo", "meant"),
    [
        ("kafka_node_log_dir", "kafka_node_log_dirs"),
        ("kafka_topic", "kafka_topics"),
        ("spark_stream_job", "spark_stream_jobs"),
    ],
)
def test_a_typo_is_refused_with_the_closest_declared_name(typo, meant):
    (refusal,) = problems([typo])
    assert refusal.startswith(f"{typo} (set for dc1-broker1) is read by no role of stretch.kafka: did you mean {meant}")


@pytest.mark.parametrize("removed", sorted(variables.REMOVED))
def test_a_removed_variable_is_refused_naming_its_replacement(removed):
    (refusal,) = problems([removed])
    release, instead = variables.REMOVED[removed]
    assert refusal == f"{removed} (set for dc1-broker1) was removed in stretch.kafka {release}: use {instead}"


def test_a_variable_the_roles_compute_has_no_effect_from_the_inventory():
    (refusal,) = problems(["kafka_cluster"])
    assert "is computed by the stretch.kafka roles: an inventory value of it has no effect" in refusal


def test_what_an_earlier_play_of_the_run_registered_or_set_passes():
    """site.yml ends with spark.yml, whose preflight reads the host variables the run's earlier plays left."""
    assert {"kafka_admin_topics_result", "kafka_node_certificate"} <= PRODUCED
    assert problems(["kafka_admin_topics_result", "kafka_node_certificate"]) == []


def test_declared_foreign_and_own_variables_pass():
    assert (
        problems(["kafka_node_log_dirs", "testbed_dist", "ansible_host", "kafka_team_owner"], ["kafka_team_owner"])
        == []
    )


def test_one_line_per_variable_names_its_hosts():
    found = variables.problems(
        {f"h{i}": ["kafka_topic"] for i in range(5)} | {"x": ["spark_stream_group"]}, DECLARED, INTERNAL, (), PRODUCED
    )
    assert len(found) == 2
    assert found[0].startswith("kafka_topic (set for h0, h1, h2 and 2 more)")
    assert found[1].startswith("spark_stream_group (set for x) was removed")


def test_every_inventory_the_project_ships_sets_only_declared_variables():
    import yaml

    for inventory in ("examples/consumer/inventory", "inventories/production"):
        names = set()
        for path in (REPO / inventory).rglob("*.yml"):
            data = yaml.safe_load(path.read_text()) or {}
            if "all" in data:
                stack = [data["all"]]
                while stack:
                    node = stack.pop()
                    names.update(node.get("vars") or {})
                    for host_vars in (node.get("hosts") or {}).values():
                        names.update(host_vars or {})
                    stack.extend((node.get("children") or {}).values())
            else:
                names.update(data)
        assert problems(sorted(names)) == [], inventory


@pytest.mark.parametrize(
    "name", ["kafka_controllers_group", "kafka_brokers_group", "spark_masters_group", "spark_workers_group",
             "spark_stream_masters_group"],
)  # fmt: skip
def test_a_variable_that_would_rename_a_group_is_refused_naming_the_fixed_groups(name):
    (refusal,) = problems([name])
    assert refusal.startswith(f"{name} (set for dc1-broker1) was removed in stretch.kafka 2.0.0: use the inventory ")
    assert "kafka_controllers, kafka_brokers, spark_masters and spark_workers" in refusal
    assert "a group of your own joins as one of their children" in refusal
