"""The admin-protocol modules' connection: set once per play through module_defaults, never by a task."""

from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GROUP = "group/stretch.kafka.admin"
CONNECTION = {"bootstrap_servers", "bootstrap_controllers", "client_config"}
ADMIN = {
    f"stretch.kafka.{name}"
    for name in yaml.safe_load((REPO / "meta/runtime.yml").read_text())["action_groups"]["admin"]
}


def load(path):
    return yaml.safe_load(Path(path).read_text()) or []


def tasks(node):
    """Every task of a task list, the ones inside blocks too."""
    for task in node or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from tasks(task.get(key))


def task_file(role, entry):
    return REPO / "roles" / role.removeprefix("stretch.kafka.") / "tasks" / f"{Path(entry).stem}.yml"


def runs_admin_module(role, entry, seen=None):
    """Whether a role's entry point runs an admin-protocol module, itself or through what it includes."""
    seen = set() if seen is None else seen
    if (role, entry) in seen or not task_file(role, entry).exists():
        return False
    seen.add((role, entry))
    for task in tasks(load(task_file(role, entry))):
        if ADMIN & set(task):
            return True
        for key in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
            name = task.get(key)
            if isinstance(name, str) and "{{" not in name and runs_admin_module(role, name, seen):
                return True
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            call = task.get(key)
            if call and runs_admin_module(call["name"], call.get("tasks_from", "main"), seen):
                return True
    for dependency in (load(task_file(role, "main").parents[1] / "meta" / "main.yml") or {}).get("dependencies") or []:
        name = dependency["role"] if isinstance(dependency, dict) else dependency
        if runs_admin_module(name, "main", seen):
            return True
    return False


def plays():
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in load(path):
            if "hosts" in play:
                yield path.name, play


def play_runs_admin_module(play):
    calls = [(r["role"] if isinstance(r, dict) else r, "main") for r in play.get("roles") or []]
    for task in tasks(play.get("tasks")):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if key in task:
                calls.append((task[key]["name"], task[key].get("tasks_from", "main")))
    return any(runs_admin_module(role, entry) for role, entry in calls)


def test_the_admin_group_holds_the_collections_admin_protocol_modules():
    assert "stretch.kafka.kafka_topics" in ADMIN
    assert all((REPO / "plugins/modules" / f"{m.split('.')[-1]}.py").exists() for m in ADMIN)


@pytest.mark.parametrize(("playbook", "play"), list(plays()), ids=[f"{f}: {p['name']}" for f, p in plays()])
def test_a_play_that_runs_an_admin_module_sets_its_connection_once_with_module_defaults(playbook, play):
    defaults = set(play.get("module_defaults") or {})
    if play_runs_admin_module(play):
        assert GROUP in defaults, f"{playbook}: play {play['name']!r} runs an admin module without module_defaults"
    else:
        assert GROUP not in defaults, f"{playbook}: play {play['name']!r} sets module_defaults it does not use"


def test_no_task_sets_the_admin_connection_itself():
    found = []
    for path in sorted((REPO / "roles").glob("*/tasks/*.yml")):
        for task in tasks(load(path)):
            for module in ADMIN & set(task):
                if CONNECTION & set(task[module] or {}):
                    found.append(f"{path.relative_to(REPO)}: {task['name']}")
    assert found == []


def test_some_play_runs_an_admin_module():
    """The walk finds the plays it must judge (a broken walk would pass every play)."""
    assert any(play_runs_admin_module(play) for _, play in plays())


# -- tags: one concern at a time -------------------------------------------------------


def imported_with_tags():
    """The playbooks that another imports with tags, and those tags."""
    found = {}
    for path in sorted((REPO / "playbooks").glob("*.yml")):
        for play in load(path):
            if "ansible.builtin.import_playbook" in play and play.get("tags"):
                found.setdefault(play["ansible.builtin.import_playbook"], set()).update(play["tags"])
    return found


def test_every_play_carries_the_tag_of_its_concern():
    """On the play, on the import of its playbook, or (a play of several concerns) on each of its tasks."""
    imported = imported_with_tags()

    def tagged(playbook, play):
        # A role imported statically brings its tasks' own tags (kafka_admin's: the next test).
        return (
            play.get("tags")
            or playbook in imported
            or all(t.get("tags") or "ansible.builtin.import_role" in t for t in play.get("tasks") or [])
        )

    assert [f"{f}: {p['name']}" for f, p in plays() if not tagged(f, p)] == []


def test_the_preflight_runs_whatever_tags_are_asked_for():
    assert all(play.get("tags") == ["always"] for play in load(REPO / "playbooks/preflight.yml"))


def test_site_reconciles_one_declaration_at_a_time_with_its_tag():
    """site.yml --tags topics runs the preflight and kafka_admin's topics tasks, and none of its others."""
    site = [task for _, play in plays() if play["name"].startswith("Wait until the cluster is ready, reconcile")
            for task in tasks(play["tasks"])]  # fmt: skip
    imported = next(
        t for t in site if (t.get("ansible.builtin.import_role") or {}).get("name") == "stretch.kafka.kafka_admin"
    )
    # Imported, not included: its tasks' own tags select them, and --list-tags shows them.
    assert "tags" not in imported, "an import's own tag would be added to every task it brings"
    concerns = {}
    for path in sorted((REPO / "roles/kafka_admin/tasks").glob("*.yml")):
        if path.stem in ("main", "preflight"):
            continue
        for task in tasks(load(path)):
            assert len(task.get("tags") or []) == 1, f"{path.name}: {task['name']} carries no single concern tag"
            concerns.setdefault(task["tags"][0], set()).add(path.stem)
    assert concerns == {
        "users": {"users"},
        "acls": {"acls"},
        "topics": {"topics"},
        "quotas": {"quotas"},
        "settings": {"cluster_settings"},
    }
