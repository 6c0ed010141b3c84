"""Runs a playbook of the stretch.kafka collection the way an operator would, and reads its results as data.

The one helper the integration tests, the drills and the benchmarks use. A
playbook named without a path runs by its collection name
(ansible-playbook stretch.kafka.<name>) from the consumer project,
examples/consumer, with the built artifact `make collection` installed there,
so what the tests run is what an operator installs. ansible-playbook runs
with the JSON callback, so every task's registered result, every host's
recap and the custom stats (set_stats) come back as data instead of text to
parse.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from testkit import REPO

ANSIBLE_PLAYBOOK = Path(sys.executable).parent / "ansible-playbook"
# The operator's project the testbed is deployed from, and the collection installed into it.
CONSUMER = REPO / "examples" / "consumer"
INSTALLED = CONSUMER / "collections" / "ansible_collections" / "stretch" / "kafka"
# What the artifact carries from this checkout (galaxy.yml's manifest).
PRODUCT = ("roles", "playbooks", "plugins", "meta")
# What the JSON callback always writes, keys sorted (ansible.posix.json).
RESULT_KEYS = ("plays", "stats")


class StaleCollectionError(RuntimeError):
    """The installed collection is not this checkout's: a run would test other code than the one in front of you."""


def stale_files(source=REPO, installed=INSTALLED):
    """The product's files where the collection installed in the consumer project differs from the source.

    Compares the installed FILES.json (each file's sha256, as
    ansible-galaxy wrote it) with the files under roles/, playbooks/,
    plugins/ and meta/ here; [] when they agree. Raises StaleCollectionError
    when nothing is installed."""
    files_json = Path(installed) / "FILES.json"
    if not files_json.is_file():
        raise StaleCollectionError(f"no stretch.kafka collection is installed in {CONSUMER}: run `make collection`")
    listed = {
        f["name"]: f["chksum_sha256"]
        for f in json.loads(files_json.read_text())["files"]
        if f["ftype"] == "file" and f["name"].split("/")[0] in PRODUCT
    }
    here = {
        str(path.relative_to(source)): hashlib.sha256(path.read_bytes()).hexdigest()
        for top in PRODUCT
        for path in (Path(source) / top).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    return sorted(name for name in listed.keys() | here.keys() if listed.get(name) != here.get(name))


def check_installed():
    """Refuses to run against a collection installed from other sources than this checkout's."""
    differ = stale_files()
    if differ:
        raise StaleCollectionError(
            f"the stretch.kafka collection installed in {CONSUMER} differs from this checkout in "
            f"{len(differ)} files ({', '.join(differ[:5])}{', ...' if len(differ) > 5 else ''}): run `make collection`"
        )


class PlaybookOutputError(RuntimeError):
    """A run whose JSON result could not be read: nothing about it may be taken as a count."""


def parse_result(stdout):
    """The JSON callback's result in stdout, or None.

    At -v and more, Ansible prints its own lines (some with braces) before the
    result; the result is the last object that starts a line and holds the
    callback's keys.
    """
    decoder = json.JSONDecoder()
    starts = [m.start() for m in re.finditer(r"^\{", stdout, re.MULTILINE)]
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(stdout, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict) and all(key in value for key in RESULT_KEYS):
            return value
    return None


@dataclass
class Run:
    returncode: int
    seconds: float
    output: dict | None  # the JSON callback's result; None when the run printed none that could be read
    stderr: str
    log: str = ""
    tasks: list = field(default_factory=list)
    stdout: str = ""  # everything it printed, verbose lines included (what a secret-leak test reads)

    @property
    def ok(self):
        return self.returncode == 0

    def _result(self):
        if self.output is None:
            raise PlaybookOutputError(
                f"the run (rc {self.returncode}) printed no result the JSON callback should have written; "
                f"stderr ends: {self.stderr[-2000:]}"
            )
        return self.output

    @property
    def recap(self):
        """{host: {ok, changed, failures, unreachable, skipped, ...}}."""
        return self._result()["stats"]

    @property
    def changed(self):
        """Changes reported, over every host of the run."""
        return sum(s.get("changed", 0) for s in self.recap.values())

    @property
    def stats(self):
        """What the playbooks recorded with set_stats (per_host: false)."""
        return self._result().get("global_custom_stats", {})

    def results(self, task_name):
        """[(host, result)] of every task whose name contains task_name, in the order they ran."""
        return [
            (host, result)
            for task in self.tasks
            if task_name in task["task"]["name"]
            for host, result in task["hosts"].items()
        ]

    def started(self, task_name):
        """When the first task whose name contains task_name started, in seconds since the epoch; None if none ran."""
        for task in self.tasks:
            if task_name in task["task"]["name"]:
                start = task["task"].get("duration", {}).get("start")
                return datetime.fromisoformat(start.replace("Z", "+00:00")).timestamp() if start else None
        return None

    def messages(self):
        """Every msg a task returned, for matching what an operator would read."""
        out = []
        for task in self.tasks:
            for result in task["hosts"].values():
                for item in [result, *result.get("results", [])]:
                    msg = item.get("msg")
                    if msg:
                        out.append(msg if isinstance(msg, str) else json.dumps(msg))
        return out

    @property
    def text(self):
        return "\n".join(self.messages())


def run(inventory, name, *args, check=False, timeout=1800, log_dir=None, env=None, project=None, **extra):
    """ansible-playbook -i inventory stretch.kafka.<name> -e extra; returns a Run.

    inventory: a path, or a list of paths layered in order. name: a playbook
    of the collection (site, dc_failover), run from the consumer project with
    the installed artifact (StaleCollectionError when that is not this
    checkout's), or from another operator's project directory (project: its
    ansible.cfg and collections); or a path ending in .yml (a test's own
    playbook), run from this checkout with its settings. A run that does not finish in timeout
    seconds raises subprocess.TimeoutExpired. The extra variables go to
    ansible-playbook in a file of mode 0600 (-e @file), never on its command
    line: a test may pass a password.
    """
    sources = [inventory] if isinstance(inventory, (str, Path)) else list(inventory)
    if name.endswith(".yml"):
        path, project = name, Path(project or REPO)
    else:
        if project is None:
            check_installed()
        path, project = f"stretch.kafka.{name}", Path(project or CONSUMER)
    cmd = [str(ANSIBLE_PLAYBOOK), *[a for s in sources for a in ("-i", str(Path(s).resolve()))], path]
    with tempfile.TemporaryDirectory() as scratch:
        if extra:
            extra_file = Path(scratch) / "extra-vars.json"
            extra_file.touch(mode=0o600)
            extra_file.write_text(json.dumps(extra))
            cmd += ["-e", f"@{extra_file}"]
        cmd += [*args, *(["--check"] if check else [])]
        started = time.monotonic()
        proc = _ansible_playbook(cmd, timeout, env, project)
    seconds = round(time.monotonic() - started, 1)
    output = parse_result(proc.stdout)
    if output is None and proc.returncode == 0:
        raise PlaybookOutputError(
            f"{path} succeeded but printed no result the JSON callback should have written; "
            f"stdout starts: {proc.stdout[:500]!r}"
        )
    log = ""
    if log_dir is not None:
        Path(log_dir).mkdir(parents=True, exist_ok=True)
        log = str(Path(log_dir) / f"{Path(name).stem}-{int(time.time() * 1000)}.json")
        Path(log).write_text(proc.stdout + proc.stderr)
    tasks = [task for play in (output or {}).get("plays", []) for task in play.get("tasks", [])]
    return Run(proc.returncode, seconds, output, proc.stderr, log, tasks, proc.stdout)


def _ansible_playbook(cmd, timeout, env, project=REPO):
    return subprocess.run(
        cmd,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=dict(
            os.environ,
            ANSIBLE_CONFIG=str(project / "ansible.cfg"),
            ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
            ANSIBLE_SHOW_CUSTOM_STATS="true",
            ANSIBLE_NOCOLOR="1",
            ANSIBLE_FORCE_COLOR="0",
            **(env or {}),
        ),
    )
