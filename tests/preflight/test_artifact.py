"""The artifact role: the release copied from the Ansible controller (a site without a mirror), or downloaded
and refused, naming the URL, unless its checksum matches.

Runs the real ansible-playbook on this machine (tests/preflight/playbooks/artifact.yml), with a file:// URL
standing in for a mirror: the testbed's HTTPS mirror is exercised by tests/integration/test_release_mirror.py.
"""

import hashlib
from pathlib import Path

import pytest
import yaml

from testkit.playbook import run as run_playbook

PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "artifact.yml"


def put(tmp_path, **artifact):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}}))  # fmt: skip
    defaults = {"artifact_what": "the release archive", "artifact_url": "", "artifact_checksum": "",
                "artifact_src": "", "artifact_dest": str(tmp_path / "placed.tgz")}  # fmt: skip
    return run_playbook(inventory, str(PLAYBOOK), timeout=120, **{**defaults, **artifact})


@pytest.fixture
def archive(tmp_path):
    path = tmp_path / "kafka_2.13-9.9.9.tgz"
    path.write_bytes(b"an archive's bytes\n" * 100)
    return path, "sha512:" + hashlib.sha512(path.read_bytes()).hexdigest()


def test_a_site_without_a_mirror_copies_the_archive_from_the_controller_once(tmp_path, archive):
    path, _ = archive
    first = put(tmp_path, artifact_src=str(path))
    assert first.ok, first.text
    assert (tmp_path / "placed.tgz").read_bytes() == path.read_bytes()
    again = put(tmp_path, artifact_src=str(path))
    assert again.ok
    assert again.changed == 0, again.recap


def test_a_download_whose_checksum_matches_is_put_in_place(tmp_path, archive):
    path, checksum = archive
    run = put(tmp_path, artifact_url=path.as_uri(), artifact_checksum=checksum)
    assert run.ok, run.text
    assert (tmp_path / "placed.tgz").read_bytes() == path.read_bytes()


def test_a_download_whose_checksum_does_not_match_is_refused_naming_the_url_and_leaves_nothing(tmp_path, archive):
    path, _ = archive
    wrong = "sha512:" + hashlib.sha512(b"another archive").hexdigest()
    run = put(tmp_path, artifact_url=path.as_uri(), artifact_checksum=wrong)
    assert not run.ok
    assert f"the release archive from {path.as_uri()} was refused: its checksum does not match {wrong}" in run.text
    assert not (tmp_path / "placed.tgz").exists()
