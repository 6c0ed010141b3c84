"""An operator's project runs the collection from its artifact alone, by the playbooks' collection names.

examples/consumer (ansible.cfg, requirements.yml naming the built artifact,
the testbed's inventory) is copied out of this repository, the artifact is
installed into the copy's own collections path, and from there
`ansible-playbook stretch.kafka.site` converges the deployed testbed (and
changes nothing: it is deployed already) and `stretch.kafka.smoke_test`
passes. Nothing of this checkout is on the copy's paths: a role, playbook
or file that the artifact lacks, or that is reached by a path into the
repository, fails here. The testbed's own state (its SSH key, secrets and
CA, in testbed/dist) is the site's, given as testbed_dist.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testkit import REPO
from testkit.playbook import CONSUMER, run

GALAXY = Path(sys.executable).parent / "ansible-galaxy"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the consumer project outside the repository, with the artifact installed into it."""
    copy = tmp_path_factory.mktemp("operator") / "site"
    copy.mkdir()
    shutil.copy(CONSUMER / "ansible.cfg", copy / "ansible.cfg")
    shutil.copytree(CONSUMER / "inventory", copy / "inventory")
    # The operator's own streaming jobs, which its inventory names beside itself (spark_stream_jobs).
    shutil.copytree(CONSUMER / "jobs", copy / "jobs")
    requirements = yaml.safe_load((CONSUMER / "requirements.yml").read_text())
    (artifact,) = requirements["collections"]
    artifact["name"] = str((CONSUMER / artifact["name"]).resolve())
    assert Path(artifact["name"]).is_file(), f"{artifact['name']} is missing: make collection builds it"
    (copy / "requirements.yml").write_text(yaml.safe_dump(requirements))
    installed = subprocess.run(
        [str(GALAXY), "collection", "install", "--offline", "-r", "requirements.yml", "-p", "collections"],
        cwd=copy, capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": str(GALAXY.parent), "HOME": str(Path.home()), "ANSIBLE_CONFIG": str(copy / "ansible.cfg")},
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (copy / "collections/ansible_collections/stretch/kafka/playbooks/site.yml").is_file()
    return copy


def test_the_installed_artifact_converges_the_testbed_and_changes_nothing(project):
    proc = run(project / "inventory", "site", project=project, testbed_dist=str(REPO / "testbed/dist"))
    assert proc.ok, proc.text[-3000:] + proc.stderr[-3000:]
    assert proc.changed == 0, {host: s["changed"] for host, s in proc.recap.items() if s["changed"]}


def test_the_installed_artifact_smoke_tests_the_testbed(project):
    proc = run(project / "inventory", "smoke_test", project=project, testbed_dist=str(REPO / "testbed/dist"))
    assert proc.ok, proc.text[-3000:] + proc.stderr[-3000:]
    assert "PASSED" in proc.text
