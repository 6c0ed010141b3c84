"""The artifact alone: an operator's project with nothing from this repository converges, restarts and
smoke-tests the testbed, by the playbooks' collection names.

A fresh directory gets only what an operator has: an ansible.cfg, the artifact's tarball installed into its own
collections path, a copy of the testbed's inventory (with the streaming jobs it names beside it), and a wheelhouse
of third-party packages (a copy of testbed/dist/wheels, which must hold none of the project's own packages: those
come from the collection). From there `stretch.kafka.site` converges the deployed testbed and changes nothing, and
`stretch.kafka.rolling_restart` restarts a node of each DC behind its gates (a broker of each broker DC and the
tiebreaker's controller: both kinds of gate, every DC; `make drill-restart` restarts every node under load) and
ends with the smoke test, whose packages the roles install from the artifact and the project's wheelhouse. A role,
playbook or package that the artifact lacks, or that is reached by a path into the repository, fails here. The
testbed's own state (its SSH key, secrets, CA and release mirror, in testbed/dist) is the site's, given as
testbed_dist.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testkit import REPO
from testkit.cluster import smoke_report_problems, start_times
from testkit.leaks import leaks
from testkit.playbook import CONSUMER, run

GALAXY = Path(sys.executable).parent / "ansible-galaxy"
OWN = ("kafka_group_source", "kafka_smoke", "stretch_exporter")


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A fresh operator's project: ansible.cfg, the installed artifact, the inventory and a wheelhouse."""
    site = tmp_path_factory.mktemp("operator") / "site"
    site.mkdir()
    shutil.copy(CONSUMER / "ansible.cfg", site / "ansible.cfg")
    shutil.copytree(CONSUMER / "inventory", site / "inventory")
    # The operator's own streaming jobs, which its inventory names beside itself (spark_stream_jobs).
    shutil.copytree(CONSUMER / "jobs", site / "jobs")
    wheelhouse = REPO / "testbed/dist/wheels"
    shutil.copytree(wheelhouse, site / "wheelhouse", ignore=shutil.ignore_patterns(".*"))
    own = [w.name for w in (site / "wheelhouse").glob("*.whl") if w.name.split("-")[0] in OWN]
    assert own == [], f"the wheelhouse holds the project's own packages {own}: they must come from the artifact"
    requirements = yaml.safe_load((CONSUMER / "requirements.yml").read_text())
    (artifact,) = requirements["collections"]
    tarball = (CONSUMER / artifact["name"]).resolve()
    assert tarball.is_file(), f"{tarball} is missing: make collection builds it"
    shutil.copy(tarball, site / Path(artifact["name"]).name)
    (site / "requirements.yml").write_text(yaml.safe_dump(requirements))
    installed = subprocess.run(
        [str(GALAXY), "collection", "install", "--offline", "-r", "requirements.yml", "-p", "collections"],
        cwd=site, capture_output=True, text=True, timeout=300, check=False,
        env={"PATH": str(GALAXY.parent), "HOME": str(Path.home()), "ANSIBLE_CONFIG": str(site / "ansible.cfg")},
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert (site / "collections/ansible_collections/stretch/kafka/playbooks/site.yml").is_file()
    return site


def play(project, name, *args, **extra):
    return run(
        project / "inventory",
        name,
        *args,
        project=project,
        testbed_dist=str(REPO / "testbed/dist"),
        testbed_wheelhouse=str(project / "wheelhouse"),
        **extra,
    )


def test_the_installed_artifact_converges_the_testbed_changes_nothing_and_prints_no_secret(project, cluster, tmp_path):
    """The converge runs at full verbosity with --diff: every testbed secret, and any PEM private key, must be
    absent from all it printed (site.yml writes the nodes' keys and keystores, sets the SCRAM users and gives each
    DC's Spark cluster its secret). test_security.py reads the other playbooks that handle secrets."""
    secrets, keys = cluster.secrets(), cluster.private_key_files()
    assert secrets, "the inventory gives no secret to look for: the test would pass on anything"
    assert keys, "no private key to look for in kafka_pki_dir"
    proc = play(project, "site", "-vvvv", "--diff", log_dir=tmp_path)
    # Verbose lines go to stderr where ANSIBLE_VERBOSE_TO_STDERR is set (Molecule sets it for what it runs).
    printed = proc.stdout + proc.stderr
    assert "Using module file" in printed, "the run's verbose output was not read"
    # First, before anything of the run is shown: a diff of a changed or failed task is where a secret would be.
    found = leaks(printed, secrets, keys)
    assert found == [], f"site.yml printed secrets (whole output in {proc.log}): {found}"
    assert proc.ok, f"site.yml failed (whole output in {proc.log}): {proc.text[-3000:]}"
    changed = sorted(
        {
            f"{host}: {task['task']['name']}"
            for task in proc.tasks
            for host, result in task["hosts"].items()
            if result.get("changed")
        }
    )
    assert proc.changed == 0, changed or {host: s["changed"] for host, s in proc.recap.items() if s["changed"]}


def test_the_installed_artifact_restarts_a_node_of_each_dc_and_its_smoke_test_proves_each_dc_reads_locally(
    project, cluster, hosts
):
    # One node per DC, not all seven: each further node runs the same tasks again, about 45 s each in CI.
    chosen = [next(b.host for b in cluster.brokers if b.dc == dc) for dc in cluster.dcs]
    chosen += [c.host for c in cluster.controllers if c.dc not in cluster.dcs]
    before = start_times(cluster, hosts)
    report = project / "reports" / "smoke.json"
    proc = play(project, "rolling_restart", kafka_smoke_report=str(report), kafka_ops_restart_hosts=chosen)
    assert proc.ok, proc.text[-3000:] + proc.stderr[-3000:]
    after = start_times(cluster, hosts)
    assert sorted(h for h in before if before[h] != after[h]) == sorted(chosen), (chosen, before, after)
    assert "PASSED" in proc.text, proc.text[-3000:]
    # Each DC read on its own Spark cluster from its own DC's brokers; the control read crossed.
    assert smoke_report_problems(cluster, json.loads(report.read_text())) == []
    # The smoke test's own packages came from the artifact, hash-checked with no index (python_venv).
    installs = [r for _, r in proc.results("Ensure the collection's own packages are in the virtualenv")]
    assert installs, "the smoke test's own packages were not installed by python_venv"
    assert all("--no-index" in str(r.get("cmd", "")) or not r.get("changed") for r in installs), installs
