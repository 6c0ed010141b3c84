"""Filters: the cluster model (compiled once from the inventory), and the configuration composed from it."""

from __future__ import annotations

from pathlib import Path

from ansible.errors import AnsibleFilterError

from ansible_collections.stretch.kafka.plugins.module_utils import (
    certificates,
    failover,
    features,
    identity,
    java_properties,
    model,
    nodes,
    properties,
    releases,
    run_scope,
    security,
    topics,
    topology,
    variables,
)


def _guard(func):
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (ValueError, KeyError, TypeError) as exc:
            raise AnsibleFilterError(f"{func.__name__}: {exc}") from exc

    wrapper.__name__ = func.__name__
    return wrapper


def cluster(groups, hostvars, settings):
    """The cluster model (module_utils/model.py) of the inventory's groups and host variables, and the settings."""
    return model.cluster(groups, hostvars, settings)


def retire_refusals(declared, brokers, node_id, default_replication_factor):
    """Why the broker cannot be retired, from the declared topics (as written) and the inventory's brokers."""
    return topics.retire_refusals(topics.normalize(declared, default_replication_factor), brokers, node_id)


def features_plan(described, mapping, held):
    """{"updates": ["name=level"], "notes": [...]}: the features to raise, from kafka-features' own texts."""
    levels, release = features.parse_mapping(mapping)
    updates, notes = features.finalize_plan(features.parse_describe(described), levels, release, held)
    return {"updates": updates, "notes": notes}


def downgrade_refusal(described, version):
    """Why release version may not run the cluster kafka-features describe printed ('' when it may)."""
    return features.downgrade_refusal(features.parse_describe(described), version)


def failover_moment(lost):
    """Which of a lost DC's nodes the run stopped and which it could not reach.

    lost: the hostvars of the DC's nodes after the play that takes them down.
    A node it reached carries kafka_node_stopped_at (from systemd); one it
    could not reach was down before the run, the usual case in an outage, and
    carries none. No time of the run's own comes out: the outage is timed
    from Kafka's record only (module_utils/metadata_log.py).
    """
    stopped, unreachable = [], []
    for node in lost:
        at = node.get("kafka_node_stopped_at")
        (unreachable if at is None or at == "" else stopped).append(node["inventory_hostname"])
    return {"stopped": sorted(stopped), "unreachable": sorted(unreachable)}


def failover_record(recorded, dc, relax):
    """The record of the topics' own min.insync.replicas dc's failovers lowered (module_utils/failover.py), from
    the records read on the surviving controllers (None where there was none) and what this run lowers."""
    return failover.merge_record(dc, recorded, relax or {})


def failover_restore(recorded, dc):
    """{topic: its own min.insync.replicas} to put back after dc's failover, from the records read on the
    surviving controllers; an error when they disagree."""
    return failover.restore_values(dc, recorded)


def properties_file(settings, comment=()):
    """The text of a Java properties file of settings, keys in the order Jinja's dictsort gives, under a comment
    (a string or a list of lines): each key and value escaped so Properties.load reads back what was given."""
    ordered = sorted(settings.items(), key=lambda item: str(item[0]).lower())
    return java_properties.render(dict(ordered), comment)


def smoke_cluster_args(clusters, properties_dir):
    """The smoke test's arguments for each DC's own Spark cluster ({dc: {master, conf, secret, hosts, network}}:
    module_utils/spark_sites.py finds them in the inventory), with the Spark settings files in properties_dir
    (spark_config's smoke_spark_files writes them: <dc>.properties per cluster, default.properties for the reads
    on the smoke test's master). A DC's network, when given, makes the runner count what crosses into the DC's
    reading hosts (its hosts: the workers; the runner adds its own address there, the driver's)."""
    args = [f"--spark-properties={properties_dir}/default.properties"]
    for dc, cluster in sorted((clusters or {}).items()):
        if not isinstance(cluster, dict) or not cluster.get("master"):
            raise ValueError(f"kafka_smoke_spark_clusters[{dc!r}] needs a master (spark://host:port)")
        args.append(f"--dc-master={dc}={cluster['master']}")
        args += [f"--dc-spark-conf={dc}:{conf}" for conf in cluster.get("conf") or []]
        args.append(f"--dc-spark-properties={dc}={properties_dir}/{dc}.properties")
        if cluster.get("network"):
            if not cluster.get("hosts"):
                raise ValueError(
                    f"kafka_smoke_spark_clusters[{dc!r}] has a network but no hosts: the runner counts only what "
                    "crosses into the hosts that read for the DC"
                )
            args.append(f"--dc-network={dc}={cluster['network']}")
            args.append(f"--dc-hosts={dc}={','.join(cluster['hosts'])}")
    return args


def variable_problems(hostvars, hosts, own=()):
    """Why host variables with the collection's prefixes would be ignored (module_utils/variables.py)."""
    declared, internal, produced = variables.collection_variables(str(Path(__file__).resolve().parents[2]))
    names = {host: [name for name in hostvars[host] if name.startswith(variables.PREFIXES)] for host in hosts}
    return variables.problems(names, declared, internal, own, produced)


class FilterModule:
    def filters(self):
        return {
            "cluster": _guard(cluster),
            "retire_refusals": _guard(retire_refusals),
            "meta_properties": _guard(identity.parse_meta_properties),
            "features_plan": _guard(features_plan),
            "downgrade_refusal": _guard(downgrade_refusal),
            "release_checksum": _guard(releases.release_checksum),
            "checksum_problem": _guard(releases.checksum_problem),
            "checksum_matches": _guard(releases.matches),
            "unpacked_release_problem": _guard(releases.unpacked_release_problem),
            "smoke_cluster_args": _guard(smoke_cluster_args),
            "failover_moment": _guard(failover_moment),
            "failover_record": _guard(failover_record),
            "failover_restore": _guard(failover_restore),
            "scrape_targets": _guard(nodes.scrape_targets),
            "tls_targets": _guard(nodes.tls_targets),
            "server_properties": _guard(properties.node_server_properties),
            "tool_properties": _guard(properties.tool_properties),
            "java_properties": _guard(properties_file),
            "limit_problem": _guard(run_scope.limit_problem),
            "variable_problems": _guard(variable_problems),
            "min_insync_problems": _guard(topology.min_insync_problems),
            "kafka_python_client": _guard(security.kafka_python),
            "librdkafka_client": _guard(security.librdkafka),
            "certificate_problems": _guard(certificates.problems),
            "subject_alt_names": _guard(certificates.subject_alt_names),
        }
