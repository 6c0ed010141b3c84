"""What ansible-playbook --limit may narrow each of the collection's playbooks to.

A limit narrows every play of a run, and a play none of whose hosts is left
is skipped without a word. The cluster-wide plays run on the first broker
(kafka_brokers[0]): the release guard, the restart plan, the readiness wait,
the declared topics, users and quotas, a failover's checks. A limit that
leaves that broker out skips them all and the run still ends ok: a release
older than the finalized features installed unguarded, changed configuration
on disk with no restart, no readiness check. So each playbook says here which
limits it takes, and playbooks/run_scope.yml refuses any other before a host
is touched:

    FIRST_BROKER  a limit must keep kafka_brokers[0];
    NONE          no limit at all: the playbook chooses its nodes by its own variables;
    ANY           any limit: the playbook has no cluster-wide play to lose.
"""

from __future__ import annotations

from ansible_collections.stretch.kafka.plugins.module_utils.nodes import BROKERS_GROUP, CONTROLLERS_GROUP

FIRST_BROKER = "first_broker"
NONE = "none"
ANY = "any"

# playbook: (the limits it takes, what a limit leaving the first broker out would skip,
#            how to narrow it instead)
PLAYBOOKS = {
    "preflight": (ANY, "", ""),
    "spark": (ANY, "", ""),
    "site": (
        FIRST_BROKER,
        "the release guard, the restart of nodes whose configuration changed, the readiness wait and the "
        "declared topics, users and quotas",
        "playbooks/spark.yml converges the Spark hosts alone",
    ),
    "features": (FIRST_BROKER, "the finalization of the features", ""),
    "topics": (FIRST_BROKER, "the reconcile of the declared topics", ""),
    "quotas": (FIRST_BROKER, "the reconcile of the quotas and the replication throttle", ""),
    "users": (FIRST_BROKER, "the reconcile of the SCRAM users and the ACLs", ""),
    "status": (FIRST_BROKER, "the readiness wait and the report", ""),
    "smoke_test": (FIRST_BROKER, "the smoke test", ""),
    "monitoring": (FIRST_BROKER, "the Prometheus targets and rules", ""),
    # The jobs' settings come from the cluster's model, which only the first broker compiles (the Kafka settings
    # may be the Kafka groups' variables alone); its play there reads them and contacts no host.
    "streaming": (
        FIRST_BROKER,
        "the read of the jobs' settings from the cluster's model",
        "--limit '{limit},kafka_brokers[0]' runs {limit}'s jobs alone: the play on the first broker only reads the "
        "settings, and touches no broker",
    ),
    "rolling_restart": (
        NONE,
        "the nodes its plan queues, with the plan still showing them",
        "choose the nodes with kafka_ops_restart_hosts or kafka_ops_restart_dcs",
    ),
    "dc_failover": (NONE, "the DC's nodes or the writability check", "choose the DC with kafka_ops_failover_dc"),
    "dc_recovery": (NONE, "the DC's nodes or the catch-up and restore", "choose the DC with kafka_ops_failover_dc"),
    "controllers": (
        NONE,
        "the controller that joins or leaves, or the checks of the quorum",
        "choose the controller with kafka_ops_quorum_controller",
    ),
    "brokers": (NONE, "the drain, the stop or the unregistration", "choose the broker with kafka_ops_retire_broker"),
    "rotate_certificates": (
        NONE,
        "nodes, which would keep certificates the next step no longer trusts",
        "a rotation reaches every node: run each step on the whole inventory",
    ),
}


# Variables that once renamed the inventory groups. A play's hosts: pattern is evaluated before any role or
# inventory variable, so they renamed nothing: with the groups renamed, every play over them matched no host and
# the run ended ok having done nothing.
GROUPS = (CONTROLLERS_GROUP, BROKERS_GROUP, "spark_masters", "spark_workers")


def limit_problem(playbook, limit, run_hosts, groups):
    """Why this run's --limit would skip plays the playbook needs; '' when it would not.

    playbook: the playbook's name (a key of PLAYBOOKS; None or '' for
    preflight.yml run alone). limit: ansible-playbook's --limit, None without
    one. run_hosts: the hosts the run targets, the limit applied (a play over
    all:localhost has them as ansible_play_hosts_all). groups: the
    inventory's {group: [hosts]}. Fails closed: a playbook not in PLAYBOOKS
    is refused.
    """
    name = playbook or "preflight"
    if name not in PLAYBOOKS:
        return f"kafka_run_playbook={playbook!r} is not one of the collection's playbooks ({', '.join(PLAYBOOKS)})"
    policy, skipped, instead = PLAYBOOKS[name]
    if limit is None or policy == ANY:
        return ""
    if policy == NONE:
        return (
            f"{name}.yml takes no --limit: --limit {limit!r} would skip {skipped}, and the run would still end ok; "
            f"{instead}"
        )
    first = (groups.get(BROKERS_GROUP) or [None])[0]
    if first in set(run_hosts):
        return ""
    also = f"; or {instead.format(limit=limit)}" if instead else ""
    return (
        f"--limit {limit!r} leaves out {first} ({BROKERS_GROUP}[0]), where {name}.yml runs {skipped}: those plays "
        f"would be skipped and the run would still end ok. Keep {first} in the limit (--limit '{limit},{first}'), "
        f"or run without --limit{also}"
    )
