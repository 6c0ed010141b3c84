"""How a playbook run's output is read: the JSON callback's result, or an error, never an empty pass."""

import hashlib
import json
import subprocess

import pytest

from testkit import playbook

RESULT = {
    "custom_stats": {},
    "global_custom_stats": {"kafka_recovery": {"dc": "dc2"}},
    "plays": [{"play": {"name": "p"}, "tasks": [{"task": {"name": "t"}, "hosts": {"h": {"changed": True}}}]}],
    "stats": {"h": {"ok": 1, "changed": 1, "failures": 0, "unreachable": 0}},
}


def fake_ansible(monkeypatch, stdout, returncode=0, stderr=""):
    def run(cmd, timeout, env, project):
        return subprocess.CompletedProcess(cmd, returncode, stdout, stderr)

    monkeypatch.setattr(playbook, "_ansible_playbook", run)
    monkeypatch.setattr(playbook, "check_installed", lambda: None)


def test_the_callbacks_result_is_read_after_verbose_lines_that_hold_braces(monkeypatch):
    verbose = (
        "ansible-playbook [core 2.19]\n<127.0.0.1> ESTABLISH LOCAL CONNECTION {'user': 'root'}\n"
        "redirecting {old} to {new}\n"
    )
    fake_ansible(monkeypatch, verbose + json.dumps(RESULT, indent=4, sort_keys=True) + "\n")
    run = playbook.run("inventory", "site")
    assert run.changed == 1
    assert run.stats == {"kafka_recovery": {"dc": "dc2"}}
    assert run.stdout.startswith("ansible-playbook [core")


@pytest.mark.parametrize("stdout", ["", "ERROR! the playbook could not be parsed\n", '{"plays": [', "{}"])
def test_a_successful_run_without_a_readable_result_is_an_error(monkeypatch, stdout):
    fake_ansible(monkeypatch, stdout)
    with pytest.raises(playbook.PlaybookOutputError, match="no result"):
        playbook.run("inventory", "site")


def test_a_failed_run_without_a_result_has_no_counts_to_read(monkeypatch):
    fake_ansible(monkeypatch, "", returncode=4, stderr="ERROR! Unexpected Exception")
    run = playbook.run("inventory", "site")
    assert not run.ok
    assert "Unexpected Exception" in run.stderr
    with pytest.raises(playbook.PlaybookOutputError, match="no result"):
        run.changed  # noqa: B018


def installed_collection(tmp_path, files):
    """A source tree and a collection 'installed' from it with files {name: bytes} listed in its FILES.json."""
    source, installed = tmp_path / "src", tmp_path / "installed"
    for name, data in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_bytes(data)
    listed = [
        {"name": name, "ftype": "file", "chksum_sha256": hashlib.sha256(data).hexdigest()}
        for name, data in files.items()
    ]
    installed.mkdir()
    (installed / "FILES.json").write_text(json.dumps({"files": [{"name": ".", "ftype": "dir"}, *listed]}))
    return source, installed


def test_an_installed_collection_built_from_the_source_is_current(tmp_path):
    source, installed = installed_collection(tmp_path, {"roles/r/tasks/main.yml": b"---\n", "plugins/x.py": b"x=1\n"})
    assert playbook.stale_files(source, installed) == []


def test_an_installed_collection_is_stale_when_a_file_changed_or_was_added_or_removed(tmp_path):
    source, installed = installed_collection(tmp_path, {"roles/r/tasks/main.yml": b"---\n", "plugins/x.py": b"x=1\n"})
    (source / "plugins/x.py").write_bytes(b"x=2\n")
    (source / "playbooks").mkdir()
    (source / "playbooks/new.yml").write_bytes(b"---\n")
    (source / "roles/r/tasks/main.yml").unlink()
    assert playbook.stale_files(source, installed) == ["playbooks/new.yml", "plugins/x.py", "roles/r/tasks/main.yml"]


def test_no_installed_collection_is_an_error_that_says_how_to_install_it(tmp_path):
    with pytest.raises(playbook.StaleCollectionError, match="make collection"):
        playbook.stale_files(tmp_path, tmp_path / "nothing")
