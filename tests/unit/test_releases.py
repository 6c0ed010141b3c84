"""The release tarballs the roles know come with the checksum Apache publishes beside them."""

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import FilterModule
from testkit import REPO

release_checksum = FilterModule().filters()["release_checksum"]
# kafka_2.13-4.3.1.tgz.sha512, as Apache publishes it beside the tarball.
PUBLISHED_4_3_1 = (
    "c7d7b2318cb51aa0c61d3246a51c349210073c5c9b754947ef965a439f2f939e"
    "8600f204e134a75ac31faf3829c9370960ef7c6a9886c8a1dbf0339a21f4c54c"
)


def test_the_default_release_has_its_published_checksum():
    defaults = yaml.safe_load((REPO / "roles/kafka_node/defaults/main.yml").read_text())
    assert defaults["kafka_node_version"] == "4.3.1"
    assert defaults["kafka_node_scala_version"] == "2.13"
    assert release_checksum("kafka_2.13-4.3.1") == f"sha512:{PUBLISHED_4_3_1}"
    assert "release_checksum" in defaults["kafka_node_archive_checksum"]


@pytest.mark.parametrize("archive", ["kafka_2.13-4.2.0", "kafka_2.12-4.3.1", ""])
def test_a_release_the_roles_do_not_know_gets_no_checksum_for_preflight_to_refuse(archive):
    assert release_checksum(archive) == ""
