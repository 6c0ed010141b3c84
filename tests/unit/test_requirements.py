"""What the controller must have: the version ranges, and the messages that name the install command."""

import re

import pytest
import yaml

from ansible_collections.stretch.kafka.plugins.module_utils import requirements
from testkit import REPO


@pytest.mark.parametrize(
    ("version", "spec", "ok"),
    [
        ("3.0.12", ">=3.0.12,<4", True),
        ("3.0.11", ">=3.0.12,<4", False),
        ("4.0", ">=3.0.12,<4", False),
        ("3.1.0rc1", ">=3.0.12,<4", True),
        ("2.16.1", "==2.16.1", True),
        ("2.16", "==2.16.0", True),
        ("44.0.1", ">=41", True),
    ],
)
def test_a_version_is_judged_against_its_range(version, spec, ok):
    assert requirements.satisfies(version, spec) is ok


def test_a_missing_or_old_package_names_the_python_and_the_install_command():
    wanted = [{"name": "kafka-python", "specifier": ">=3.0.12,<4", "for": "the admin-protocol modules"}]
    (missing,) = requirements.problems("/usr/bin/python3", "ctl", wanted, {"kafka-python": None}, [], {})
    assert missing == (
        "ctl: the admin-protocol modules needs the Python package kafka-python>=3.0.12,<4 in /usr/bin/python3, which "
        "lacks it: /usr/bin/python3 -m pip install 'kafka-python>=3.0.12,<4'"
    )
    (old,) = requirements.problems("/p", "ctl", wanted, {"kafka-python": "2.0.2"}, [], {})
    assert "which has 2.0.2" in old
    assert requirements.problems("/p", "ctl", wanted, {"kafka-python": "3.0.12"}, [], {}) == []


def test_a_missing_command_is_named_with_its_path():
    commands = [{"name": "spark-submit", "path": "/venv/bin/spark-submit", "for": "the smoke test's Spark driver"}]
    (missing,) = requirements.problems("/p", "ctl", [], {}, commands, {"/venv/bin/spark-submit": False})
    assert missing == (
        "ctl: the smoke test's Spark driver needs spark-submit at /venv/bin/spark-submit, which is missing or not "
        "executable"
    )


def test_the_execution_environment_declares_what_preflight_checks():
    checked = yaml.safe_load((REPO / "roles/kafka/vars/main.yml").read_text())["kafka_controller_packages"]
    declared = {}
    for line in (REPO / "meta/requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, spec = re.fullmatch(r"([A-Za-z0-9_.-]+)(.*)", line).groups()
            declared[name] = spec
    for package in checked:
        assert declared.get(package["name"]) == package["specifier"], package["name"]
    environment = yaml.safe_load((REPO / "meta/execution-environment.yml").read_text())
    assert environment["dependencies"] == {"python": "meta/requirements.txt", "system": "meta/bindep.txt"}
