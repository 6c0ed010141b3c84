"""Cluster identity: the cluster id is made once and kept, storage is formatted once.

The cluster itself is the record of its identity: each formatted node's
meta.properties holds cluster.id. A new id is made only when no node holds
one, which is the one time the controllers are formatted as the initial voter
set of the dynamic (KIP-853) quorum.
"""

from __future__ import annotations

import base64
import os


def new_uuid(randbytes=os.urandom):
    """A Kafka Uuid string (base64url, no padding), as kafka-storage random-uuid makes.

    Kafka re-rolls ids that start with '-' (they read as command-line flags) and
    the reserved ids, whose high 64 bits are zero.
    """
    while True:
        raw = randbytes(16)
        if raw[:8] == bytes(8):
            continue
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def parse_meta_properties(text):
    """meta.properties as a dict; None when the node has none (is unformatted)."""
    if text is None:
        return None
    props = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "!")) or "=" not in line:
            continue
        key, _equals, value = line.partition("=")
        props[key.strip()] = value.strip()
    return props


# Where an operator reads how to recover a quorum whose controllers lost their metadata.
RECOVERY_DOC = "docs/operations.md#controllers-that-lost-their-metadata"


class IdentityError(ValueError):
    pass


def storage_plan(nodes, configured_cluster_id=None, all_controllers=(), uuid=new_uuid, all_brokers=()):
    """Decide the cluster id and each unformatted node's format arguments.

    nodes: list of {host, node_id, roles, meta, endpoint} where meta is the
    parsed meta.properties of the node's metadata directory, or None, and
    endpoint is a controller's advertised host:port on the controller listener.
    all_controllers: every controller in the inventory. When a node needs
    formatting, all of them must have reported: a run limited to part of the
    cluster cannot tell a new cluster from an existing one.
    all_brokers: every broker in the inventory. Before the controllers are
    formatted as a new quorum, all of them must have reported too: formatted
    brokers under controllers with no metadata are a cluster that lost its
    quorum, never a new one, and that is refused.
    Returns {cluster_id, bootstrap, initial_controllers, format_args: {host: [...]}, notes: [...]}.
    """
    reported = {n["host"] for n in nodes}
    missing = sorted(set(all_controllers) - reported)
    unformatted = sorted(n["host"] for n in nodes if not n.get("meta"))
    if missing and unformatted:
        raise IdentityError(
            f"{', '.join(unformatted)} must be formatted, but controller(s) {', '.join(missing)} did not report "
            "their storage (left out by --limit, or unreachable); the cluster id cannot be decided safely. "
            "Run again with every controller in the play."
        )
    ids = {}
    for node in nodes:
        meta = node.get("meta")
        if meta and meta.get("cluster.id"):
            ids.setdefault(meta["cluster.id"], []).append(node["host"])
    if len(ids) > 1:
        listing = "; ".join(f"{cid}: {', '.join(hosts)}" for cid, hosts in sorted(ids.items()))
        raise IdentityError(f"the nodes belong to different clusters ({listing}); refusing to continue")
    existing = next(iter(ids), None)
    if configured_cluster_id and existing and configured_cluster_id != existing:
        raise IdentityError(
            f"kafka_cluster_id={configured_cluster_id} but the formatted nodes "
            f"({', '.join(ids[existing])}) belong to cluster {existing}"
        )
    cluster_id = existing or configured_cluster_id or uuid()

    controllers = [n for n in nodes if "controller" in n["roles"]]
    bootstrap = not any(n.get("meta") for n in controllers)
    unreported_brokers = sorted(set(all_brokers) - reported)
    if bootstrap and unformatted and unreported_brokers:
        raise IdentityError(
            f"the controllers are to be formatted as a new quorum, but broker(s) {', '.join(unreported_brokers)} "
            "did not report their storage (left out by --limit, or unreachable); a new cluster cannot be told from "
            "one whose controllers lost their metadata. Run again with every node in the play."
        )
    if bootstrap and existing:
        # The brokers hold the cluster's identity but no controller holds its
        # metadata. A new initial voter set would start an empty metadata log
        # under the old id, and the brokers would follow it: every topic they
        # host would be unknown to it. Nothing here can rebuild that log.
        lost = ", ".join(sorted(n["host"] for n in controllers))
        raise IdentityError(
            f"controller(s) {lost} have no metadata (no meta.properties in their metadata directory) while "
            f"{', '.join(sorted(ids[existing]))} are formatted for cluster {existing}; formatting the controllers "
            "as a new quorum would start an empty metadata log under that cluster id. Refusing to format anything. "
            "Check that each controller's metadata directory is the one it had (a missing mount), "
            f"then follow {RECOVERY_DOC}."
        )
    directory_ids = {str(n["node_id"]): uuid() for n in controllers} if bootstrap else {}
    # Must be the same string on every controller: it is the initial voter set.
    voters = (
        ",".join(
            f"{n['node_id']}@{n['endpoint']}:{directory_ids[str(n['node_id'])]}"
            for n in sorted(controllers, key=lambda n: int(n["node_id"]))
        )
        if bootstrap
        else ""
    )

    format_args, notes = {}, []
    for node in nodes:
        if node.get("meta"):
            continue
        if "controller" not in node["roles"]:
            format_args[node["host"]] = []
        elif bootstrap:
            format_args[node["host"]] = ["--initial-controllers", voters]
        else:
            # The quorum exists: a controller with empty storage must not
            # claim to be a voter it no longer is. It joins as an observer.
            format_args[node["host"]] = ["--no-initial-controllers"]
            notes.append(
                f"{node['host']}: controller storage is empty in an existing quorum; it is formatted to join "
                "as an observer. Make it a voter with 'kafka-metadata-quorum add-controller' once it has caught up."
            )
    return {
        "cluster_id": cluster_id,
        "bootstrap": bootstrap,
        "initial_controllers": voters,
        "format_args": format_args,
        "notes": notes,
    }
