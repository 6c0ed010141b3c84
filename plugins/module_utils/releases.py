"""The Apache Kafka release tarballs the roles know, each with the checksum Apache publishes beside it.

The default install source is the release tarball on Apache's archive; its
checksum is the default checksum, so the default URL is verified as it is.
A version or Scala build not listed has no default checksum: preflight then
refuses the URL until one is given.
"""

from __future__ import annotations

# {archive name: the sha512 of <archive name>.tgz, from the .tgz.sha512 file Apache publishes}
PUBLISHED_SHA512 = {
    "kafka_2.13-4.3.1": (
        "c7d7b2318cb51aa0c61d3246a51c349210073c5c9b754947ef965a439f2f939e"
        "8600f204e134a75ac31faf3829c9370960ef7c6a9886c8a1dbf0339a21f4c54c"
    ),
}


def release_checksum(archive_name):
    """'sha512:<hex>' of a known release tarball; '' for one the roles do not know."""
    digest = PUBLISHED_SHA512.get(str(archive_name or ""))
    return f"sha512:{digest}" if digest else ""


# What get_url verifies a download with: the algorithm, then the whole digest.
DIGEST_LENGTH = {"sha256": 64, "sha512": 128}


def checksum_problem(checksum, name):
    """Why checksum ('sha512:<hex>') cannot verify a download, naming variable name; '' when it can."""
    text = str(checksum or "")
    if not text:
        return f"{name} is empty: a download needs its checksum (sha256:<hex> or sha512:<hex>)"
    algorithm, _sep, digest = text.partition(":")
    if algorithm not in DIGEST_LENGTH:
        return f"{name} {text[:20]!r}... is not sha256:<hex> or sha512:<hex>"
    wanted = DIGEST_LENGTH[algorithm]
    if len(digest) != wanted or any(c not in "0123456789abcdefABCDEF" for c in digest):
        return f"{name} is not a {algorithm} digest: {algorithm}:<{wanted} hex digits>, found {len(digest)} characters"
    return ""


def matches(checksum, file_digests):
    """Whether a file whose digests are file_digests ({"sha256": hex, "sha512": hex}, None when it is missing) is
    the one checksum ('sha256:<hex>' or 'sha512:<hex>') names."""
    algorithm, _sep, wanted = str(checksum or "").partition(":")
    found = (file_digests or {}).get(algorithm)
    return bool(found and wanted) and found.lower() == wanted.lower()


def unpacked_release_problem(checksum, archive_digests, archive):
    """Why the release unpacked from archive (<release dir>.tgz, kept beside it) cannot be kept against checksum,
    the 'sha512:<hex>' the inventory gives now; '' when it can.

    archive_digests: {"sha256": hex or None, "sha512": hex or None} of the
    archive on the node (None: it is gone). A release is unpacked once, from
    an archive checked against the checksum of that day; one the inventory's
    checksum no longer names (a checksum corrected after a tampered or
    mistaken download) is refused, as is one whose archive is gone and
    cannot be checked. An empty checksum (a release copied from the
    controller without one) holds it to nothing.
    """
    if not checksum:
        return ""
    algorithm, _sep, wanted = str(checksum).partition(":")
    release = archive.removesuffix(".tgz")
    found = (archive_digests or {}).get(algorithm)
    if matches(checksum, archive_digests):
        return ""
    if not found:
        return (
            f"{archive}, which the release {release} was unpacked from, is gone: the release cannot be checked "
            "against kafka_node_archive_checksum. To install it anew from the archive the checksum names, stop the "
            f"node, remove {release}, and run again"
        )
    return (
        f"the release unpacked from {archive} is not the one kafka_node_archive_checksum names: the archive's "
        f"{algorithm} is {found[:16]}..., the checksum's {wanted[:16]}.... Find out which is right; to install the "
        f"archive the checksum names, stop the node, remove {release} and its archive, and run again"
    )
