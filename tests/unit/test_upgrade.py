"""The upgrade test's pure parts: which release it starts from, and which restarts its run explains."""

import pytest

from testkit import upgrade


def test_the_previous_release_is_the_newest_below_the_current_version():
    changelog = {"releases": {"0.1.0": {}, "0.2.0": {}, "1.0.0": {}, "2.0.0": {}, "10.0.0": {}}}
    assert upgrade.previous_release(changelog, "2.0.0") == "1.0.0"
    assert upgrade.previous_release(changelog, "2.1.0") == "2.0.0"
    assert upgrade.previous_release(changelog, "11.0.0") == "10.0.0"
    with pytest.raises(upgrade.UpgradeFailed, match="no release before 0.1.0"):
        upgrade.previous_release(changelog, "0.1.0")


def test_the_release_commit_is_the_one_that_set_galaxy_yml_to_it():
    assert upgrade.release_commit("1.0.0").startswith("951bff3")


class Run:
    def __init__(self, tasks):
        self.tasks = tasks


def task(name, **hosts):
    return {"task": {"name": name}, "hosts": hosts}


def test_changed_tasks_are_listed_per_host_loops_included():
    run = Run(
        [
            task("Write the node's files", a={"changed": True}, b={"changed": False}),
            task("Install packages", b={"changed": False, "results": [{"changed": False}, {"changed": True}]}),
            task(
                "Lay down the files",
                a={
                    "changed": True,
                    "results": [
                        {"changed": True, "item": {"src": "x.j2", "dest": "/etc/kafka/server.properties"}},
                        {"changed": False, "item": {"dest": "/etc/kafka/log4j2.yaml"}},
                        {"changed": True, "dest": "/etc/systemd/system/kafka.service", "item": "unit"},
                    ],
                },
            ),
        ]
    )
    assert upgrade.changed_tasks(run) == {
        "a": [
            "Write the node's files",
            "Lay down the files (/etc/kafka/server.properties, /etc/systemd/system/kafka.service)",
        ],
        "b": ["Install packages"],
    }


def test_the_paths_node_files_changed_are_listed():
    result = {"changed": True, "changed_files": ["/etc/kafka/server.properties"], "changed_directories": [],
              "changed_links": ["/opt/kafka/current"]}  # fmt: skip
    run = Run([task("Lay down the node's files", a=result)])
    assert upgrade.changed_tasks(run) == {
        "a": ["Lay down the node's files (/etc/kafka/server.properties, /opt/kafka/current)"]
    }


def test_a_restart_without_a_change_to_the_nodes_files_is_unexplained():
    changed = {"a": ["Lay down the node's files and links"], "b": ["Install the node exporter"]}
    assert upgrade.unexplained_restarts(["a", "b", "c"], changed) == ["b", "c"]
