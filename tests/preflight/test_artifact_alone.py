"""The artifact on its own: built as it ships, installed into a project of its own, with nothing from this
repository on any path the roles read for the project's own packages.

Runs the real ansible-galaxy and ansible-playbook on this machine. The preflight runs connect to no host (every
host points at a closed port); the python_venv run installs into a virtualenv in a temporary directory, from the
bundled wheels and a wheelhouse of third-party wheels (testbed/dist/wheels, which `make setup-testbed` fills), with
no package index.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from test_preflight_playbook import base_inventory

from testkit.playbook import run as run_playbook

# make unit runs tests/preflight two at a time: the module fixtures of this file run once, in one worker.
pytestmark = pytest.mark.xdist_group("artifact")

REPO = Path(__file__).resolve().parents[2]
GALAXY = Path(sys.executable).parent / "ansible-galaxy"
WHEELHOUSE = REPO / "testbed" / "dist" / "wheels"
LOCAL = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}


def install(tarball, project):
    """An operator's project: ansible.cfg and the collection installed from tarball."""
    project.mkdir(parents=True, exist_ok=True)
    (project / "ansible.cfg").write_text("[defaults]\ncollections_path = ./collections\nretry_files_enabled = False\n")
    done = subprocess.run(
        [GALAXY, "collection", "install", "--offline", "--no-deps", "--force", "-p", "collections", str(tarball)],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_CONFIG": str(project / "ansible.cfg")},
    )
    assert done.returncode == 0, done.stderr
    return project


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    """The artifact as release/build-collection.sh builds it, installed into a project of its own."""
    out = tmp_path_factory.mktemp("build")
    done = subprocess.run([REPO / "release/build-collection.sh", out], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    (tarball,) = out.glob("stretch-kafka-*.tar.gz")
    return install(tarball, tmp_path_factory.mktemp("operator"))


@pytest.fixture(scope="module")
def plain_artifact(tmp_path_factory):
    """What a plain `ansible-galaxy collection build` of a fresh checkout gives: no bundled packages."""
    checkout = tmp_path_factory.mktemp("checkout")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (REPO / name).is_file() and not (REPO / name).is_symlink():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, checkout / name)
    out = tmp_path_factory.mktemp("plain")
    done = subprocess.run([GALAXY, "collection", "build", "--output-path", out, checkout], capture_output=True)
    assert done.returncode == 0, done.stderr
    (tarball,) = out.glob("stretch-kafka-*.tar.gz")
    return install(tarball, tmp_path_factory.mktemp("plain-operator"))


def preflight(project, tmp_path, **variables):
    inventory = base_inventory()
    inventory["all"]["vars"].update(variables)
    path = tmp_path / "hosts.yml"
    path.write_text(yaml.safe_dump(inventory))
    return run_playbook(path, "preflight", project=project, timeout=180)


def test_the_artifact_ships_its_packages_and_an_installed_collections_readme(artifact):
    installed = artifact / "collections/ansible_collections/stretch/kafka"
    bundle = json.loads((installed / "roles/python_venv/files/wheels/bundle.json").read_text())
    assert sorted(bundle) == ["kafka-group-source", "kafka-smoke", "stretch-exporter"]
    for entry in bundle.values():
        assert (installed / "roles/python_venv/files/wheels" / entry["wheel"]).is_file()
    assert (installed / "README.md").read_text() == (REPO / "README.collection.md").read_text()
    assert "make demo" not in (installed / "README.md").read_text()


def test_the_artifact_alone_passes_its_preflight(artifact, tmp_path):
    run = preflight(artifact, tmp_path)
    assert run.ok, run.text + run.stderr[-2000:]


def test_a_plain_build_without_the_packages_is_refused_before_any_host_saying_how_to_build_it(plain_artifact, tmp_path):
    run = preflight(plain_artifact, tmp_path)
    assert not run.ok
    assert "carries none of its own packages (kafka-group-source, kafka-smoke, stretch-exporter)" in run.text
    assert "release/build-collection.sh" in run.text
    assert not [h for h, s in run.recap.items() if s.get("unreachable")]


def test_a_typo_and_a_removed_variable_are_refused_before_any_host(artifact, tmp_path):
    run = preflight(artifact, tmp_path, kafka_node_log_dir=["/data"], spark_stream_group="orders")
    assert not run.ok
    assert "kafka_node_log_dir (set for " in run.text
    assert "did you mean kafka_node_log_dirs" in run.text
    assert "spark_stream_group (set for " in run.text
    assert "was removed in stretch.kafka 2.0.0: use spark_stream_jobs[].group" in run.text
    assert not [h for h, s in run.recap.items() if s.get("unreachable")]


def test_a_controller_without_kafka_python_is_refused_naming_the_package_and_the_command(artifact, tmp_path):
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", bare], check=True)
    python = bare / "bin" / "python"
    run = preflight(artifact, tmp_path, kafka_adminclient_python=str(python))
    assert not run.ok
    assert f"needs the Python package kafka-python>=3.0.12,<4 in {python}, which lacks it" in run.text
    assert f"{python} -m pip install 'kafka-python>=3.0.12,<4'" in run.text


def test_a_ca_left_in_the_inventory_by_an_earlier_release_is_refused_until_moved(artifact, tmp_path):
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki" / "ca.crt").write_text("a CA\n")
    run = preflight(artifact, tmp_path, kafka_tls_pki_dir=str(tmp_path / "home" / "pki"))
    assert not run.ok
    assert f"The cluster's CA is in {tmp_path}/pki (where stretch.kafka 1.x kept it)" in run.text
    moved = preflight(artifact, tmp_path, kafka_tls_pki_dir=str(tmp_path / "pki"))
    assert moved.ok, moved.text


def venv_run(project, tmp_path, **variables):
    return run_playbook(
        tmp_path / "hosts.yml",
        str(REPO / "tests/preflight/playbooks/python_venv.yml"),
        project=project,
        timeout=600,
        **{
            "python_venv_what": "the smoke test",
            "python_venv_home": str(tmp_path / "home"),
            "python_venv_packages": ["confluent-kafka==2.16.1"],
            "python_venv_own": ["kafka-smoke", "kafka-group-source"],
            "python_venv_wheel_dir": str(WHEELHOUSE),
            "python_venv_python": sys.executable,
            **variables,
        },
    )


def test_the_smoke_test_installs_from_the_artifact_and_a_wheelhouse_with_no_index_then_changes_nothing(
    artifact, tmp_path
):
    if not any(WHEELHOUSE.glob("confluent_kafka-2.16.1-cp311-*.whl")):
        pytest.fail(f"no confluent-kafka wheel in {WHEELHOUSE}: run testbed/fetch-wheels.sh (make setup-testbed)")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": LOCAL}}}))
    first = venv_run(artifact, tmp_path)
    assert first.ok, first.text + first.stderr[-2000:]
    venv = tmp_path / "home" / "venv"
    listed = subprocess.run([venv / "bin/pip", "list", "--format", "json"], capture_output=True, text=True, check=True)
    installed = {p["name"]: p["version"] for p in json.loads(listed.stdout)}
    assert installed.get("kafka-smoke") == "0.1.0"
    assert installed.get("kafka-group-source") == "0.1.0"
    assert installed.get("confluent-kafka") == "2.16.1"
    again = venv_run(artifact, tmp_path)
    assert again.ok, again.text + again.stderr[-2000:]
    assert again.changed == 0, again.recap


def test_a_bundled_wheel_whose_bytes_differ_from_its_sha256_is_refused_by_pip(artifact, tmp_path):
    tampered = tmp_path / "operator"
    shutil.copytree(artifact, tampered, symlinks=True)
    wheels = tampered / "collections/ansible_collections/stretch/kafka/roles/python_venv/files/wheels"
    with zipfile.ZipFile(wheels / "kafka_smoke-0.1.0-py3-none-any.whl", "a") as wheel:
        wheel.writestr("kafka_smoke/injected.py", "print('not ours')\n")
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": LOCAL}}}))
    run = venv_run(tampered, tmp_path)
    assert not run.ok
    assert "THESE PACKAGES DO NOT MATCH THE HASHES" in run.text + run.stdout


def test_a_bundled_wheel_rebuilt_under_the_same_version_is_installed_again(artifact, tmp_path):
    rebuilt = tmp_path / "operator"
    shutil.copytree(artifact, rebuilt, symlinks=True)
    wheels = rebuilt / "collections/ansible_collections/stretch/kafka/roles/python_venv/files/wheels"
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"hosts": {"localhost": LOCAL}}}))
    first = venv_run(rebuilt, tmp_path)
    assert first.ok, first.text + first.stderr[-2000:]
    # The same sources built again at another time: the same version and files, other bytes, and the bundle's
    # sha256 of the new bytes (what release/build-collection.sh writes).
    wheel = wheels / "kafka_smoke-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as new:
        for info, data in entries:
            info.date_time = (2001, 2, 3, 4, 5, 6)
            new.writestr(info, data)
    bundle = json.loads((wheels / "bundle.json").read_text())
    bundle["kafka-smoke"]["sha256"] = hashlib.sha256(wheel.read_bytes()).hexdigest()
    (wheels / "bundle.json").write_text(json.dumps(bundle, indent=2) + "\n")
    again = venv_run(rebuilt, tmp_path)
    assert again.ok, again.text + again.stderr[-2000:]
    installs = again.results("Ensure the collection's own packages are in the virtualenv")
    assert [result.get("changed") for _, result in installs] == [True], again.text


def test_site_lists_the_tags_of_every_concern_it_reconciles(artifact):
    listed = subprocess.run(
        [Path(sys.executable).parent / "ansible-playbook", "-i", "localhost,", "stretch.kafka.site", "--list-tags"],
        cwd=artifact,
        capture_output=True,
        text=True,
        env={**os.environ, "ANSIBLE_CONFIG": str(artifact / "ansible.cfg")},
    )
    assert listed.returncode == 0, listed.stderr
    tags = set()
    for line in listed.stdout.splitlines():
        if "TASK TAGS: [" in line:
            tags.update(t.strip() for t in line.split("[", 1)[1].rstrip("]").split(","))
    assert {"topics", "users", "acls", "quotas", "settings", "pki", "nodes", "status", "spark"} <= tags, tags
