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
