"""The upgrade from the previous release: deploy it from its own artifact, then converge with this checkout's.

    python -m testkit.upgrade [--from VERSION]          (make test-upgrade)

The previous release is the newest one in changelogs/changelog.yaml below galaxy.yml's version (or the one
before it, when galaxy.yml's is released already); its artifact is built from the commit that set galaxy.yml to
its version, in a git worktree of its own, and installed into that tree's consumer project. The testbed is
recreated, the previous release deploys it with its own inventory, then this checkout's artifact converges it with
this checkout's inventory, as an operator upgrades. Checked, and written to reports/upgrade.json:
- both runs succeed, and the smoke test passes after the upgrade;
- every node the upgrade restarted had a change to its configuration or its release in that run (the tasks that
  changed on it are listed), and no node without one restarted;
- a second converge changes nothing.
The changed tasks, host by host, go into the report beside the changelog's sections of the new release, for a
person to compare: what changed must be what the changelog says.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import testinfra
import yaml

from testkit import REPO
from testkit.cluster import load, start_times
from testkit.playbook import run

REPORT = REPO / "reports" / "upgrade.json"
GALAXY = Path(sys.executable).parent / "ansible-galaxy"
LOCAL = REPO / "examples/consumer/inventory"
# What the node_files module returns of the paths it changed.
NODE_FILES_CHANGES = ("changed_directories", "changed_files", "changed_links")
# A node's tasks whose change is a reason to restart it: its configuration, unit, keystore, release.
RESTART_REASONS = ("configuration", "unit", "keystore", "release", "files")


class UpgradeFailed(RuntimeError):
    """A step of the upgrade that did not go as the release promises."""


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def previous_release(changelog: dict, current: str) -> str:
    """The newest release below current in the changelog's releases."""
    older = sorted(
        (v for v in changelog.get("releases", {}) if _version_key(v) < _version_key(current)), key=_version_key
    )
    if not older:
        raise UpgradeFailed(f"changelogs/changelog.yaml has no release before {current}")
    return older[-1]


def release_commit(version: str) -> str:
    """The commit that set galaxy.yml's version to version (the oldest one that has it)."""
    out = subprocess.run(
        ["git", "log", "--format=%H", "-S", f"version: {version}", "--", "galaxy.yml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if not out:
        raise UpgradeFailed(f"no commit set galaxy.yml's version to {version}")
    return out[-1]


def _what(result) -> str:
    """What one result of a loop changed: the file it wrote, else its item."""
    found = result.get("dest") or result.get("path")
    if found:
        return str(found)
    item = result.get("item")
    if isinstance(item, dict):
        item = item.get("dest") or item.get("path") or item.get("name") or item
    return "" if item is None else str(item)


def changed_tasks(run_result) -> dict[str, list[str]]:
    """{host: [names of the tasks that changed on it]}, from the JSON callback's results; a loop's name is
    followed by what each changed item wrote or was: "Lay down the files (/etc/kafka/server.properties)"."""
    changed: dict[str, list[str]] = {}
    for task in run_result.tasks:
        for host, result in task["hosts"].items():
            items = [item for item in result.get("results", []) if item.get("changed")]
            if not (result.get("changed") or items):
                continue
            name, labels = task["task"]["name"], [label for label in map(_what, items) if label]
            # node_files reports the paths it changed itself.
            labels += [str(p) for key in NODE_FILES_CHANGES for p in result.get(key) or []]
            changed.setdefault(host, []).append(f"{name} ({', '.join(labels)})" if labels else name)
    return changed


def unexplained_restarts(restarted: list[str], changed: dict[str, list[str]]) -> list[str]:
    """The restarted nodes whose run changed none of their files, release or unit."""
    return [host for host in restarted if not any(r in t for t in changed.get(host, []) for r in RESTART_REASONS)]


def _previous(cmd: list, cwd: Path, what: str, config: Path | None = None) -> float:
    """Run one step of the previous release's side (cmd in cwd, with config as ANSIBLE_CONFIG); its seconds."""
    started = time.monotonic()
    env = {**os.environ, **({"ANSIBLE_CONFIG": str(config)} if config else {})}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise UpgradeFailed(f"the previous release's {what} failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
    return round(time.monotonic() - started, 1)


def old_release(version: str, scratch: Path) -> Path:
    """The previous release's tree in a worktree, its artifact built and installed into its consumer project."""
    commit = release_commit(version)
    tree = scratch / f"stretch-kafka-{version}"
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=REPO, check=False)
        shutil.rmtree(tree, ignore_errors=True)
    subprocess.run(["git", "worktree", "add", "--detach", tree, commit], cwd=REPO, check=True, capture_output=True)
    # The site's state (SSH key, secrets, CA, release mirror) is the testbed's, shared by both releases.
    (tree / "testbed" / "dist").symlink_to(REPO / "testbed" / "dist")
    _previous([GALAXY, "collection", "build", "--force", "--output-path", tree / "build", tree], tree, "build")
    consumer = tree / "examples" / "consumer"
    install = [GALAXY, "collection", "install", "--offline", "--force", "-r", "requirements.yml", "-p", "collections"]
    _previous(install, consumer, "install", consumer / "ansible.cfg")
    return tree


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="previous", help="the release to upgrade from (default: the previous one)")
    args = parser.parse_args(argv)
    current = yaml.safe_load((REPO / "galaxy.yml").read_text())["version"]
    changelog = yaml.safe_load((REPO / "changelogs" / "changelog.yaml").read_text())
    previous = args.previous or previous_release(changelog, current)
    report = {"from": previous, "to": current, "commit": release_commit(previous)}
    print(f"upgrade: {previous} ({report['commit'][:10]}) -> {current} (this checkout)", flush=True)
    scratch = REPO / "reports" / "upgrade"
    scratch.mkdir(parents=True, exist_ok=True)
    tree = old_release(previous, scratch)
    try:
        for step in ("down", "up"):
            subprocess.run(
                ["ansible-playbook", "-i", LOCAL, f"testbed/{step}.yml"], cwd=REPO, check=True, capture_output=True
            )
        consumer = tree / "examples/consumer"
        site = [Path(sys.executable).parent / "ansible-playbook", "-i", "inventory", "stretch.kafka.site"]
        report["previous_site_seconds"] = _previous(site, consumer, "site", consumer / "ansible.cfg")
        print(f"upgrade: {previous} deployed in {report['previous_site_seconds']} s", flush=True)
        cluster = load()
        hosts = {n.host: testinfra.get_host(n.testinfra_spec()[0], **n.testinfra_spec()[1]) for n in cluster.nodes}
        before = start_times(cluster, hosts)
        upgrade = run(LOCAL, "site", timeout=3600)
        if not upgrade.ok:
            raise UpgradeFailed(f"the upgrade's site failed:\n{upgrade.text[-3000:]}{upgrade.stderr[-2000:]}")
        after = start_times(cluster, hosts)
        restarted = sorted(h for h in before if before[h] != after[h])
        changed = changed_tasks(upgrade)
        report.update(
            upgrade_site_seconds=upgrade.seconds,
            restarted=restarted,
            changed_by_host={h: changed[h] for h in sorted(changed)},
            changed_count=upgrade.changed,
            unexplained_restarts=unexplained_restarts(restarted, changed),
            changelog=changelog.get("releases", {}).get(current, {}).get("changes", {}),
        )
        print(
            f"upgrade: converged to {current} in {upgrade.seconds} s, {upgrade.changed} changes; restarted "
            f"{len(restarted)} of {len(cluster.nodes)} nodes: {', '.join(restarted) or 'none'}",
            flush=True,
        )
        smoke = run(LOCAL, "smoke_test", timeout=1800)
        report["smoke_passed"] = smoke.ok and "PASSED" in smoke.text
        report["smoke_seconds"] = smoke.seconds
        again = run(LOCAL, "site", timeout=3600)
        report["second_converge_changed"] = again.changed if again.ok else None
        problems = []
        if report["unexplained_restarts"]:
            problems.append(f"restarted without a change to their files: {report['unexplained_restarts']}")
        if not report["smoke_passed"]:
            problems.append(f"the smoke test failed after the upgrade: {smoke.text[-2000:]}")
        if report["second_converge_changed"] != 0:
            problems.append(f"a second converge changed {report['second_converge_changed']}")
        report["problems"] = problems
    finally:
        REPORT.write_text(json.dumps(report, indent=2) + "\n")
        subprocess.run(["git", "worktree", "remove", "--force", tree], cwd=REPO, check=False, capture_output=True)
    for host, tasks in report.get("changed_by_host", {}).items():
        print(f"  {host}: {'; '.join(tasks)}")
    print(f"upgrade: smoke test {'PASSED' if report['smoke_passed'] else 'FAILED'} in {report['smoke_seconds']} s; "
          f"second converge changed {report['second_converge_changed']}; report: {REPORT}")  # fmt: skip
    for problem in report["problems"]:
        print(f"upgrade: FAIL: {problem}")
    return 1 if report["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
