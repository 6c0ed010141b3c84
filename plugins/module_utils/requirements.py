"""What a Python and a host must have for a playbook's tasks that run there, judged before the run changes anything.

The admin-protocol modules need kafka-python on the admin runner (kafka_adminclient_host, by default the Ansible
controller); the smoke test needs spark-submit (with its pyspark) and Java on its runner. meta/requirements.txt and
meta/bindep.txt declare the controller's share for an execution environment; preflight checks the Python and host
the run will use, so that a run without them stops before its first change instead of at its first admin task.
"""

from __future__ import annotations

import os
import re
import shutil
from importlib import metadata

_ITEM = {"name": {"type": "str", "required": True}, "for": {"type": "str", "default": "the run"}}
# The options of the controller_requirements module and of its action, which reads them in Ansible's own process
# when the module would run there anyway.
ARGUMENT_SPEC = {
    "packages": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {**_ITEM, "specifier": {"type": "str", "default": ""}},
    },
    "commands": {
        "type": "list",
        "elements": "dict",
        "default": [],
        "options": {**_ITEM, "path": {"type": "str", "required": True}},
    },
}

_SPEC = re.compile(r"(==|!=|>=|<=|>|<)\s*([0-9][0-9A-Za-z.]*)")


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version (3.0.12rc1 -> (3, 0, 12)), for range checks."""
    parts = []
    for part in str(version).split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != part:
            break
    if not parts:
        raise ValueError(f"'{version}' is not a version")
    return tuple(parts)


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    width = max(len(a), len(b))
    return a + (0,) * (width - len(a)), b + (0,) * (width - len(b))


def satisfies(version: str, specifier: str) -> bool:
    """Whether version is within a specifier such as '>=3.0.12,<4' (release segments only)."""
    have = release(version)
    for clause in filter(None, (c.strip() for c in specifier.split(","))):
        match = _SPEC.fullmatch(clause)
        if match is None:
            raise ValueError(f"'{clause}' is not a version clause (such as >=3.0)")
        op, bound = match.groups()
        a, b = _pad(have, release(bound))
        ok = {"==": a == b, "!=": a != b, ">=": a >= b, "<=": a <= b, ">": a > b, "<": a < b}[op]
        if not ok:
            return False
    return True


def installed_version(name: str) -> str | None:
    """The version of the distribution name installed for the running Python, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def executable(path: str) -> bool:
    """Whether path (a bare name is looked up on the PATH) is an executable file."""
    found = shutil.which(path) if os.sep not in path else path
    return bool(found) and os.path.isfile(found) and os.access(found, os.X_OK)


def judge(python: str, host: str, packages, commands) -> tuple[dict, list[str]]:
    """(found, refusals) for the running Python on host: each package's installed version (None when it lacks it),
    and problems() of what it lacks, or the one reason a specifier is not one."""
    found = {p["name"]: installed_version(p["name"]) for p in packages}
    present = {c["path"]: executable(c["path"]) for c in commands}
    try:
        return found, problems(python, host, packages, found, commands, present)
    except ValueError as exc:
        return found, [str(exc)]


def problems(python: str, host: str, packages, found: dict, commands, present: dict) -> list[str]:
    """Why the Python (its path) on host lacks what the run needs, each with the command that installs it.

    packages: [{name, specifier, for}]; found: {name: installed version or None}. commands: [{name, path, for}];
    present: {path: whether it is an executable file}.
    """
    out = []
    for package in packages:
        name, spec, why = package["name"], package.get("specifier", ""), package.get("for", "the run")
        version = found.get(name)
        install = f"{python} -m pip install '{name}{spec}'"
        if version is None:
            out.append(f"{host}: {why} needs the Python package {name}{spec} in {python}, which lacks it: {install}")
        elif spec and not satisfies(version, spec):
            out.append(f"{host}: {why} needs {name}{spec} in {python}, which has {version}: {install}")
    for command in commands:
        if not present.get(command["path"]):
            out.append(
                f"{host}: {command.get('for', 'the run')} needs {command['name']} at {command['path']}, "
                "which is missing or not executable"
            )
    return out
