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
