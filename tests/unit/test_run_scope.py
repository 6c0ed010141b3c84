"""--limit: which limits each playbook takes, so that none can skip a cluster-wide play and still end ok."""

import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.module_utils import run_scope
from ansible_collections.stretch.kafka.plugins.module_utils.run_scope import PLAYBOOKS, limit_problem

REPO = Path(__file__).resolve().parents[2]
# Imported by others only: the scope check itself, and the restart plays site.yml and rolling_restart.yml share.
IMPORTED_ONLY = {"run_scope", "restart_queued"}
GROUPS = {
    "kafka_controllers": ["dc1-controller", "dc2-controller", "dc3-controller"],
    "kafka_brokers": ["dc1-broker1", "dc1-broker2", "dc2-broker1", "dc2-broker2"],
    "spark_masters": ["dc1-spark", "dc2-spark"],
}
EVERY_HOST = sorted({h for hosts in GROUPS.values() for h in hosts})


def problem(playbook, limit, run_hosts):
    return limit_problem(playbook, limit, run_hosts, GROUPS)


@pytest.mark.parametrize("playbook", [*PLAYBOOKS, None])
def test_a_run_without_a_limit_is_never_refused(playbook):
    assert problem(playbook, None, EVERY_HOST) == ""


def test_a_converge_limited_away_from_the_first_broker_is_refused_saying_how_to_limit_it():
    assert problem("site", "dc2-broker1", ["dc2-broker1"]) == (
        "--limit 'dc2-broker1' leaves out dc1-broker1 (kafka_brokers[0]), where site.yml runs the release guard, "
        "the restart of nodes whose configuration changed, the readiness wait and the declared topics, users and "
        "quotas: those plays would be skipped and the run would still end ok. Keep dc1-broker1 in the limit "
        "(--limit 'dc2-broker1,dc1-broker1'), or run without --limit; or playbooks/spark.yml converges the Spark "
        "hosts alone"
    )


@pytest.mark.parametrize("playbook", [p for p, (policy, _, _) in PLAYBOOKS.items() if policy == run_scope.FIRST_BROKER])
def test_a_limit_that_keeps_the_first_broker_is_let_through(playbook):
    assert problem(playbook, "dc2-broker1:dc1-broker1", ["dc2-broker1", "dc1-broker1"]) == ""
    assert problem(playbook, "dc2*", ["dc2-broker1", "dc2-broker2", "dc2-controller"]).startswith(
        "--limit 'dc2*' leaves out dc1-broker1 (kafka_brokers[0])"
    )


@pytest.mark.parametrize(
    ("playbook", "instead"),
    [
        ("rolling_restart", "choose the nodes with kafka_ops_restart_hosts or kafka_ops_restart_dcs"),
        ("dc_failover", "choose the DC with kafka_ops_failover_dc"),
        ("dc_recovery", "choose the DC with kafka_ops_failover_dc"),
        ("controllers", "choose the controller with kafka_ops_quorum_controller"),
        ("brokers", "choose the broker with kafka_ops_retire_broker"),
        ("rotate_certificates", "a rotation reaches every node: run each step on the whole inventory"),
    ],
)
def test_a_playbook_that_chooses_its_own_nodes_takes_no_limit_even_one_with_the_first_broker(playbook, instead):
    found = problem(playbook, "dc1-broker1,dc2-broker1", ["dc1-broker1", "dc2-broker1"])
    assert found.startswith(f"{playbook}.yml takes no --limit: --limit 'dc1-broker1,dc2-broker1' would skip ")
    assert found.endswith(instead)


def test_the_streaming_job_limited_to_one_dc_s_spark_hosts_keeps_the_first_broker_where_its_settings_are_read():
    # The jobs' settings come from the cluster's model, compiled on the first broker: without it in the limit,
    # the Spark play met an undefined stream_cluster after the scope check had passed.
    assert problem("streaming", "dc2-spark", ["dc2-spark"]) == (
        "--limit 'dc2-spark' leaves out dc1-broker1 (kafka_brokers[0]), where streaming.yml runs the read of the "
        "jobs' settings from the cluster's model: those plays would be skipped and the run would still end ok. "
        "Keep dc1-broker1 in the limit (--limit 'dc2-spark,dc1-broker1'), or run without --limit; or "
        "--limit 'dc2-spark,kafka_brokers[0]' runs dc2-spark's jobs alone: the play on the first broker only reads "
        "the settings, and touches no broker"
    )
    assert problem("streaming", "dc2-spark,kafka_brokers[0]", ["dc2-spark", "dc1-broker1"]) == ""


def test_preflight_alone_and_the_spark_hosts_take_any_limit():
    assert problem(None, "dc2-broker1", ["dc2-broker1"]) == ""
    assert problem("spark", "dc2-broker1", ["dc2-broker1"]) == ""


def test_an_unknown_playbook_is_refused_not_let_through():
    assert problem("sight", None, EVERY_HOST).startswith("kafka_run_playbook='sight' is not one of the collection's")


# -- every playbook takes part ----------------------------------------------------------


def playbooks():
    return {path.stem: yaml.safe_load(path.read_text()) for path in sorted((REPO / "playbooks").glob("*.yml"))}


def test_every_playbook_is_in_the_table_and_the_table_names_no_other():
    assert set(PLAYBOOKS) == set(playbooks()) - IMPORTED_ONLY


@pytest.mark.parametrize("name", sorted(set(PLAYBOOKS) - {"preflight"}))
def test_every_playbook_judges_its_scope_first_under_its_own_name(name):
    first = playbooks()[name][0]
    assert first.get("ansible.builtin.import_playbook") in ("preflight.yml", "run_scope.yml"), (
        f"{name}.yml: its first entry must import preflight.yml or run_scope.yml"
    )
    assert (first.get("vars") or {}).get("kafka_run_playbook") == name


def test_preflight_judges_the_scope_before_anything_else():
    assert playbooks()["preflight"][0].get("ansible.builtin.import_playbook") == "run_scope.yml"
    [play] = playbooks()["run_scope"]
    assert play["hosts"] == "all:localhost", "a play over every host the limit keeps, so no limit can skip it"


@pytest.mark.parametrize("name", sorted(PLAYBOOKS))
def test_a_playbook_with_a_play_on_the_first_broker_takes_no_limit_that_leaves_it_out(name):
    on_first_broker = [p for p in playbooks()[name] if p.get("hosts") == "kafka_brokers[0]"]
    if on_first_broker:
        assert PLAYBOOKS[name][0] != run_scope.ANY, f"{name}.yml runs {on_first_broker[0]['name']!r} there"


# -- the Kafka groups' names are fixed (the variables that once renamed them: tests/unit/test_variables.py) --


def test_no_playbook_names_a_group_by_a_variable():
    # A hosts: pattern is evaluated before any role or inventory variable: a group named by one would be missing.
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()):
            hosts = str(play.get("hosts", ""))
            # Only the groups an inventory has, of names written here (no warning for a missing Spark group).
            fixed = re.fullmatch(r"\{\{ groups \| stretch\.kafka\.host_pattern\(('[a-z_]+'(, )?)+\) \}\}", hosts)
            assert "{{" not in hosts or fixed, f"{path.name}: {play.get('name')}"
