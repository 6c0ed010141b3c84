"""Kafka's feature levels across an upgrade: what to finalize, one feature at a time, and which release may run.

After the binaries of a new release roll through the cluster, the cluster
still runs the old release's feature levels (metadata.version and the
others); until they are finalized a rollback to the old binaries works.
Finalizing raises each feature to the new release's default level; after
that the old release cannot read the metadata, and a rollback is refused.

Two texts of Kafka's own tool are read here:

    kafka-features describe
      Feature: metadata.version  SupportedMinVersion: 3.3-IV3  SupportedMaxVersion: 4.3-IV0
               FinalizedVersionLevel: 4.2-IV1  Epoch: 42
    kafka-features version-mapping --release-version 4.3
      metadata.version=29 (4.3)
      kraft.version=1
      ...

`kafka-features upgrade --release-version` also raises kraft.version, which
turns a static quorum into a dynamic one (KAFKA-21426). A feature is only
ever raised here when it is named, and kraft.version is held unless the
operator asks for it.
"""

from __future__ import annotations

import re

DESCRIBE = re.compile(
    r"Feature:\s*(?P<name>\S+)\s+SupportedMinVersion:\s*(?P<min>\S+)\s+SupportedMaxVersion:\s*(?P<max>\S+)"
    r"\s+FinalizedVersionLevel:\s*(?P<finalized>\S+)"
)
MAPPING = re.compile(r"(?P<name>[a-z][a-z0-9._]*)=(?P<level>\d+)(?:\s+\((?P<release>[^)]+)\))?")
METADATA_VERSION = "metadata.version"
HELD_BY_DEFAULT = ("kraft.version",)


class FeatureError(ValueError):
    pass


def parse_describe(text):
    """{feature: {"min", "max", "finalized"}} as kafka-features describe prints them (strings)."""
    found = {
        m["name"]: {"min": m["min"], "max": m["max"], "finalized": m["finalized"]} for m in DESCRIBE.finditer(text)
    }
    if METADATA_VERSION not in found:
        raise FeatureError(f"kafka-features describe did not report {METADATA_VERSION}: {text.strip()[:300]!r}")
    return found


def parse_mapping(text):
    """({feature: level}, release) as kafka-features version-mapping prints them."""
    levels, release = {}, None
    for line in text.splitlines():
        match = MAPPING.fullmatch(line.strip())
        if match:
            levels[match["name"]] = int(match["level"])
            release = release or match["release"]
    if METADATA_VERSION not in levels:
        raise FeatureError(f"kafka-features version-mapping did not report {METADATA_VERSION}: {text.strip()[:300]!r}")
    return levels, release


def release_of(version):
    """(major, minor) of a release ("4.3.1"), or of a metadata.version name ("4.3-IV0")."""
    match = re.match(r"^(\d+)\.(\d+)", str(version))
    if not match:
        raise FeatureError(f"cannot read a release from {version!r}")
    return int(match[1]), int(match[2])


def finalize_plan(described, target, release, held=HELD_BY_DEFAULT):
    """The features to raise, as ["name=level"], and the ones held back, as notes.

    described: parse_describe() of the cluster, running the new binaries
    everywhere; target, release: parse_mapping() of the new release. A
    feature is raised only when its target is above what is finalized
    (metadata.version: when its finalized release is older), and refused when
    the cluster does not support the target (a node still runs the old release).
    """
    updates, notes, problems = [], [], []
    for name, level in sorted(target.items()):
        have = described.get(name)
        if have is None:
            problems.append(f"{name}: the cluster does not report it (a node runs an older release?)")
        elif name == METADATA_VERSION:
            if release_of(have["max"]) < release_of(release):
                problems.append(f"{name}: the cluster supports up to {have['max']}, not {release}")
            elif release_of(have["finalized"]) < release_of(release):
                updates.append(f"{name}={level}")
        elif int(have["finalized"]) >= level:
            continue
        elif int(have["max"]) < level:
            problems.append(f"{name}={level}: the cluster supports up to {have['max']} (a node runs an older release?)")
        elif name in held:
            notes.append(f"{name} held at {have['finalized']} (the release's level is {level}); name it to raise it")
        else:
            updates.append(f"{name}={level}")
    if problems:
        raise FeatureError("cannot finalize: " + "; ".join(problems))
    return updates, notes


def downgrade_refusal(described, version):
    """Why the binaries of release version may not run this cluster: its finalized metadata.version is newer.

    Returns a message, or "" when version can run it.
    """
    finalized = described[METADATA_VERSION]["finalized"]
    if release_of(finalized) > release_of(version):
        return (
            f"the cluster's metadata.version is finalized at {finalized}; Kafka {version} cannot read it. "
            "A rollback is possible only before the features are finalized (playbooks/features.yml)"
        )
    return ""


# metadata.version's levels as Kafka numbers them (MetadataVersion; 3.3-IV3, level 7, is the oldest a 4.x cluster
# runs), by name: the admin protocol's DescribeFeatures gives the level, kafka-features prints the name.
METADATA_VERSION_LEVELS = dict(
    enumerate(
        ["3.0-IV1", "3.1-IV0", "3.2-IV0", "3.3-IV0", "3.3-IV1", "3.3-IV2", "3.3-IV3", "3.4-IV0", "3.5-IV0", "3.5-IV1",
         "3.5-IV2", "3.6-IV0", "3.6-IV1", "3.6-IV2", "3.7-IV0", "3.7-IV1", "3.7-IV2", "3.7-IV3", "3.7-IV4", "3.8-IV0",
         "3.9-IV0", "4.0-IV0", "4.0-IV1", "4.0-IV2", "4.0-IV3", "4.1-IV0", "4.1-IV1", "4.2-IV0", "4.2-IV1", "4.3-IV0"],
        start=1,
    )
)  # fmt: skip


def _hosts(nodes):
    return ", ".join(n["host"] for n in nodes)


def _by_version(nodes):
    versions = {}
    for n in nodes:
        versions.setdefault(str(n["version"]), []).append(n)
    return sorted(versions.items())


def release_guard(nodes, read):
    """Whether the releases a run installs may run the cluster's finalized features, judged before any node changes.

    nodes: the Kafka nodes of the run, as {"host", "formatted" (its meta.properties exists), "current" (the
    release directory its current link names, "" for none), "release" (the one this run installs), "version"
    (kafka_node_version)}. read(): the cluster's finalized features, {feature: level}, over the admin protocol
    from any broker that answers; it is always tried. A node whose release changes (its link differs or is
    missing) to one older than the finalized metadata.version is refused, whichever host is first in the
    inventory: a rebuilt or new node has no disk to say the cluster exists, the cluster's answer does. When the
    features cannot be read (or carry a level this collection does not know) and any node was formatted, every
    release change is refused (fails closed); with no node formatted the cluster is new, and with no release
    changing the binaries that run it stay: nothing to refuse. Returns {"read", "finalized", "refusals", "notes"}.
    """
    result = {"read": False, "finalized": None, "refusals": [], "notes": []}
    changing = [n for n in nodes if n["current"] != n["release"]]
    try:
        features = read()
        if METADATA_VERSION not in (features or {}):
            raise FeatureError(f"the cluster's reply has no finalized {METADATA_VERSION}")
    except Exception as exc:  # noqa: BLE001  any failed read refuses a change in a formatted cluster, naming why
        why = str(exc) if isinstance(exc, FeatureError) else f"{type(exc).__name__}: {exc}"
        if not any(n["formatted"] for n in nodes):
            result["notes"].append(f"no node is formatted and no broker answered ({why}): a new cluster")
            return result
        if not changing:
            result["notes"].append(f"the cluster's finalized features could not be read ({why}); no release changes")
            return result
        reason = (
            why
            if isinstance(exc, FeatureError)
            else (
                f"the cluster's finalized features could not be read ({why}). A downgrade past them cannot be ruled "
                "out: run this again once the cluster answers (start it on the release it runs now if it is down)"
            )
        )
        for version, hosts in _by_version(changing):
            result["refusals"].append(
                f"kafka_node_version={version} changes the release of {_hosts(hosts)} in a formatted cluster, but "
                + reason
            )
        return result
    result.update(read=True, finalized=features)
    level = int(features[METADATA_VERSION])
    name = METADATA_VERSION_LEVELS.get(level)
    newest = max(METADATA_VERSION_LEVELS)
    for version, hosts in _by_version(changing):
        if name is None:
            what = (f"newer than any release this collection knows (up to {METADATA_VERSION_LEVELS[newest]}, level "
                    f"{newest})" if level > newest else "a level this collection does not know")  # fmt: skip
            result["refusals"].append(
                f"kafka_node_version={version} on {_hosts(hosts)}: the cluster's {METADATA_VERSION} is finalized at "
                f"level {level}, {what}: whether Kafka {version} can read it is not known"
            )
        elif release_of(name) > release_of(version):
            refusal = downgrade_refusal({METADATA_VERSION: {"finalized": name}}, version)
            result["refusals"].append(f"kafka_node_version={version} on {_hosts(hosts)}: {refusal}")
    return result
