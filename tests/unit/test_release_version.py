"""One version everywhere: galaxy.yml's is the newest release of the changelog, and the artifact the example
project installs is of that version."""

import yaml

from testkit import REPO


def version_key(version):
    return tuple(int(part) for part in version.split("."))


def galaxy_version():
    return yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]


def test_galaxy_yml_is_the_changelogs_newest_release():
    releases = yaml.safe_load((REPO / "changelogs/changelog.yaml").read_text())["releases"]
    assert max(releases, key=version_key) == galaxy_version()


def test_the_example_project_installs_the_artifact_of_that_version():
    (artifact,) = yaml.safe_load((REPO / "examples/consumer/requirements.yml").read_text())["collections"]
    assert artifact == {"name": f"./stretch-kafka-{galaxy_version()}.tar.gz", "type": "file"}
    assert f"stretch-kafka-{galaxy_version()}.tar.gz" in (REPO / "README.collection.md").read_text()
