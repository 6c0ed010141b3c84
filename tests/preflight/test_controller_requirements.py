"""controller_requirements read in Ansible's own process, and by its module, give the same answer.

Preflight asks it of the admin runner, by default this controller with
Ansible's own Python; there its action reads the packages in Ansible's
process instead of starting the module in a second copy of the same Python.
Any other Python (here: the same virtualenv named by another path) gets the
module. Both must find the same versions and refuse the same things.
"""

import sys
from pathlib import Path

import pytest
import yaml

from testkit import REPO
from testkit.playbook import run as run_playbook

PLAYBOOK = str(REPO / "tests/preflight/playbooks/controller_requirements.yml")
# ansible-playbook's own Python (its script's interpreter line), and the same virtualenv by another name.
ANSIBLES = (Path(sys.executable).parent / "ansible-playbook").read_text().splitlines()[0].removeprefix("#!")
OTHER_NAME = str(Path(ANSIBLES).with_name("python" if Path(ANSIBLES).name != "python" else "python3"))
PACKAGES = [
    {"name": "kafka-python", "specifier": ">=3.0.12,<4", "for": "the admin-protocol modules"},
    {"name": "ansible-core", "specifier": ">=99", "for": "a test"},
    {"name": "no-such-distribution-of-stretch", "for": "a test"},
]
COMMANDS = [
    {"name": "sh", "path": "sh", "for": "a test"},
    {"name": "nothing", "path": "/nonexistent/stretch-tool", "for": "a test"},
]


def judged(tmp_path, python):
    local = {"all": {"hosts": {"localhost": {"ansible_connection": "local"}}}}
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(local))
    run = run_playbook(tmp_path / "hosts.yml", PLAYBOOK, timeout=120, requirements_python=python,
                       requirements_packages=PACKAGES, requirements_commands=COMMANDS)  # fmt: skip
    [(_, result)] = run.results("Read the packages and commands")
    return run, result


@pytest.mark.parametrize("python", [ANSIBLES, OTHER_NAME], ids=["ansible's own python", "another path"])
def test_the_refusal_names_each_missing_package_and_command(python, tmp_path):
    run, result = judged(tmp_path, python)
    assert not run.ok
    assert result["python"] == python
    assert result["found"]["kafka-python"]
    assert result["found"]["no-such-distribution-of-stretch"] is None
    assert "kafka-python" not in result["msg"], result["msg"]
    assert f"a test needs ansible-core>=99 in {python}, which has" in result["msg"], result["msg"]
    assert "a test needs the Python package no-such-distribution-of-stretch" in result["msg"], result["msg"]
    assert "a test needs nothing at /nonexistent/stretch-tool" in result["msg"], result["msg"]
    assert "needs sh at" not in result["msg"], result["msg"]


def test_ansibles_own_python_is_read_in_its_process_and_agrees_with_the_module(tmp_path):
    (tmp_path / "own").mkdir()
    (tmp_path / "other").mkdir()
    _, own = judged(tmp_path / "own", ANSIBLES)
    _, module = judged(tmp_path / "other", OTHER_NAME)
    # The module's result echoes its arguments (invocation); the action's, read in Ansible's process, does not.
    assert "invocation" not in own, own
    assert "invocation" in module, module
    assert own["found"] == module["found"]
    assert own["msg"].replace(ANSIBLES, "PY") == module["msg"].replace(OTHER_NAME, "PY")
