"""The release tarballs the roles know come with the checksum Apache publishes beside them."""

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.filter.kafka_config import FilterModule
from ansible_collections.stretch.kafka.plugins.module_utils import releases
from ansible_collections.stretch.kafka.plugins.module_utils.topology import check_install
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


# -- an unpacked release, checked again against the checksum the inventory gives now ----------

ARCHIVE = "/opt/kafka_2.13-4.3.1.tgz"
DIGESTS = {"sha256": "a" * 64, "sha512": "b" * 128}


def test_a_release_unpacked_from_the_archive_the_checksum_names_is_kept():
    assert releases.unpacked_release_problem(f"sha512:{'b' * 128}", DIGESTS, ARCHIVE) == ""
    assert releases.unpacked_release_problem(f"sha256:{'A' * 64}", DIGESTS, ARCHIVE) == ""
    # From the controller without a checksum: nothing to hold it to.
    assert releases.unpacked_release_problem("", DIGESTS, ARCHIVE) == ""


def test_a_release_unpacked_from_another_archive_than_the_checksum_names_is_refused():
    checksum = f"sha512:{'c' * 128}"
    assert releases.unpacked_release_problem(checksum, DIGESTS, ARCHIVE) == (
        f"the release unpacked from {ARCHIVE} is not the one kafka_node_archive_checksum names: the archive's sha512 "
        f"is {'b' * 16}..., the checksum's {'c' * 16}.... Find out which is right; to install the archive the checksum "
        "names, stop the node, remove /opt/kafka_2.13-4.3.1 and its archive, and run again"
    )


def test_a_release_whose_archive_is_gone_cannot_be_checked_and_is_refused():
    found = releases.unpacked_release_problem(f"sha512:{'b' * 128}", {"sha256": None, "sha512": None}, ARCHIVE)
    assert found.startswith(f"{ARCHIVE}, which the release /opt/kafka_2.13-4.3.1 was unpacked from, is gone: ")


def install(**agent):
    kafka = {"src": "", "url": "https://downloads.example/kafka.tgz", "checksum": f"sha512:{'0' * 128}"}
    return {"b1": {**kafka, "metrics_agent": {"enabled": True, "src": "", "url": "https://m/agent.jar", **agent}}}


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"checksum": ""}, "b1: kafka_node_metrics_agent_checksum is empty: a download needs its checksum"),
        ({"checksum": "md5:abc"}, "b1: kafka_node_metrics_agent_checksum 'md5:abc'... is not sha256:<hex>"),
        ({"checksum": f"sha256:{'0' * 60}"}, "b1: kafka_node_metrics_agent_checksum is not a sha256 digest"),
    ],
)
def test_the_metrics_agent_s_download_needs_its_checksum(agent, message):
    found = check_install(install(**agent))
    assert len(found) == 1, found
    assert found[0].startswith(message), found


@pytest.mark.parametrize(
    "agent",
    [
        {"checksum": f"sha256:{'0' * 64}"},
        {"checksum": f"sha512:{'0' * 128}"},
        {"checksum": "", "src": "/srv/agent.jar"},
        {"checksum": "", "enabled": False},
    ],
    ids=["sha256", "sha512", "from the controller", "no agent"],
)
def test_the_metrics_agent_with_its_checksum_or_from_the_controller_passes(agent):
    assert check_install(install(**agent)) == []


def test_a_file_matches_the_checksum_of_its_own_algorithm_only():
    assert releases.matches(f"sha256:{'A' * 64}", DIGESTS)
    assert not releases.matches(f"sha256:{'b' * 64}", DIGESTS)
    assert not releases.matches("", DIGESTS)
    assert not releases.matches(f"sha512:{'b' * 128}", None), "a missing file matches nothing"
