"""How a playbook run's output is read: the JSON callback's result, or an error, never an empty pass."""

import json
import subprocess

import pytest

from stretch import playbook

RESULT = {
    "custom_stats": {},
    "global_custom_stats": {"kafka_recovery": {"dc": "dc2"}},
    "plays": [{"play": {"name": "p"}, "tasks": [{"task": {"name": "t"}, "hosts": {"h": {"changed": True}}}]}],
    "stats": {"h": {"ok": 1, "changed": 1, "failures": 0, "unreachable": 0}},
}


def fake_ansible(monkeypatch, stdout, returncode=0, stderr=""):
    def run(cmd, timeout, env):
        return subprocess.CompletedProcess(cmd, returncode, stdout, stderr)

    monkeypatch.setattr(playbook, "_ansible_playbook", run)


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
