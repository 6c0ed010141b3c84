"""The Python packages the roles install on hosts: the collection's own, bundled in it, and third-party ones.

The project's own packages (the kafka-group source, the smoke test, the cluster's exporter) are not on any
package index: the release build (release/build-collection.sh) bundles their wheels in the collection, with
bundle.json naming each one's version, wheel and sha256, and python_venv installs them from there with pip's
hash checking and no index. Only an operator who names a package with its pinned version and sha256
(python_venv_index_packages) gets it from an index instead, so a package published under one of these names by
someone else is never installed. Third-party packages come from the operator's index or wheelhouse, each pinned
with ``==`` so that a converge installs exactly the declared version (pip's ``present`` keeps whatever version
satisfies an unpinned name).
"""

from __future__ import annotations

import json
import re

# The project's own packages: every one must be in the bundle of a released collection.
OWN = ("kafka-group-source", "kafka-smoke", "stretch-exporter")

_PINNED = re.compile(
    r"(?P<name>[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)(\[[A-Za-z0-9._,-]+\])?==(?P<version>[A-Za-z0-9.!+_-]+)"
)
_SHA256 = re.compile(r"[0-9a-f]{64}")

BUILD_HINT = "build the artifact with release/build-collection.sh (make collection), which bundles them"


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_problems(entries, variable: str) -> list[str]:
    """Why a list of third-party requirements cannot be installed as declared, naming the variable and entry.

    Each entry is ``name==version``: a converge then installs exactly it, and a changed pin upgrades it.
    The collection's own packages never come from this list (from an index, anyone may publish their names).
    """
    if not isinstance(entries, list):
        return [f"{variable} must be a list of requirements (name==version), not {type(entries).__name__}"]
    problems = []
    for index, entry in enumerate(entries):
        where = f"{variable}[{index}]"
        if not isinstance(entry, str):
            problems.append(f"{where} must be a string (name==version), not {type(entry).__name__}")
            continue
        match = _PINNED.fullmatch(entry.strip())
        if match is None:
            problems.append(
                f"{where} = '{entry}' is not pinned: write name==version, so that a converge installs exactly it"
            )
            continue
        if canonical(match.group("name")) in OWN:
            problems.append(
                f"{where} = '{entry}': {canonical(match.group('name'))} is one of the collection's own packages, "
                "installed from the collection; remove it from the list (python_venv_index_packages names the "
                "ones an index should serve, with their sha256)"
            )
    return problems


def index_problems(entries) -> list[str]:
    """Why python_venv_index_packages is not a list of the collection's own packages, each pinned and hashed."""
    variable = "python_venv_index_packages"
    if not isinstance(entries, list):
        return [f"{variable} must be a list of {{name, version, sha256}}, not {type(entries).__name__}"]
    problems = []
    for index, entry in enumerate(entries):
        where = f"{variable}[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where} must be a mapping with name, version and sha256")
            continue
        unknown = sorted(set(entry) - {"name", "version", "sha256"})
        if unknown:
            problems.append(f"{where} has unknown key(s) {', '.join(map(str, unknown))} (name, version, sha256)")
        name = entry.get("name")
        if not isinstance(name, str) or canonical(name) not in OWN:
            problems.append(f"{where}.name = {name!r} is not one of the collection's packages ({', '.join(OWN)})")
        version = entry.get("version")
        if not isinstance(version, str) or not re.fullmatch(r"[0-9][A-Za-z0-9.!+_-]*", version):
            problems.append(f"{where}.version = {version!r} is not a pinned version (such as 0.1.0)")
        sha256 = entry.get("sha256")
        if not isinstance(sha256, str) or not _SHA256.fullmatch(sha256):
            problems.append(f"{where}.sha256 must be the wheel's sha256, 64 lower-case hex digits")
    return problems


def bundle_problems(bundle, wheels=None) -> list[str]:
    """Why the collection's bundle (bundle.json's content, None when absent) cannot serve every own package.

    wheels: the file names found beside bundle.json; a bundle that names a wheel that is not there is refused.
    """
    if bundle is None:
        return [
            f"this stretch.kafka collection carries none of its own packages ({', '.join(OWN)}): "
            f"roles/python_venv/files/wheels/bundle.json is missing; {BUILD_HINT}"
        ]
    if not isinstance(bundle, dict):
        return [f"roles/python_venv/files/wheels/bundle.json is not a mapping; {BUILD_HINT}"]
    problems = []
    for name in OWN:
        entry = bundle.get(name)
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k), str) for k in ("version", "wheel")):
            problems.append(f"the collection's bundle lacks {name}; {BUILD_HINT}")
        elif not _SHA256.fullmatch(str(entry.get("sha256", ""))):
            problems.append(f"the collection's bundle gives {name} no sha256; {BUILD_HINT}")
        elif wheels is not None and entry["wheel"] not in wheels:
            problems.append(f"the collection's bundle names {entry['wheel']} for {name}, which it lacks; {BUILD_HINT}")
    return problems


def own_requirements(bundle: dict, names, index_packages, wheel_dir: str) -> dict:
    """pip's requirements for the collection's own packages, each with its sha256, and whether any needs an index.

    A package named in index_packages comes from an index as name==version with the operator's hash; every
    other from its bundled wheel, copied to wheel_dir on the host. Returns {lines, wheels, index}: the
    requirements file's lines, the bundled wheels to copy, and whether pip must be allowed an index.
    """
    from_index = {canonical(entry["name"]): entry for entry in index_packages or []}
    lines, wheels = [], []
    for name in names:
        key = canonical(name)
        if key not in OWN:
            raise ValueError(f"{name} is not one of the collection's packages ({', '.join(OWN)})")
        if key in from_index:
            entry = from_index[key]
            lines.append(f"{key}=={entry['version']} --hash=sha256:{entry['sha256']}")
            continue
        entry = (bundle or {}).get(key)
        if not isinstance(entry, dict):
            raise ValueError(f"the collection's bundle lacks {key}; {BUILD_HINT}")
        wheels.append(entry["wheel"])
        lines.append(f"{wheel_dir.rstrip('/')}/{entry['wheel']} --hash=sha256:{entry['sha256']}")
    return {"lines": lines, "wheels": wheels, "index": any(canonical(n) in from_index for n in names)}


def requirements_missing(entries, held) -> list[str]:
    """The requirements (``name==version``) a virtualenv does not hold at their pinned version, in their order.

    held is what the virtualenv's Python reports: a JSON object of distribution name to version, as text (the
    role reads it with importlib.metadata), or that object. Anything that cannot be read as that (no
    virtualenv yet, an empty or partial reply) holds nothing, so every requirement is missing and gets
    installed; so is an entry that is not a plain pin, which pip must judge. Versions are compared as
    written, after PEP 503 names: ``==`` pins one release, and pip writes the version it installed."""
    if isinstance(held, str):
        try:
            held = json.loads(held) if held.strip() else {}
        except ValueError:
            held = {}
    if not isinstance(held, dict):
        held = {}
    versions = {canonical(str(name)): str(version) for name, version in held.items()}
    missing = []
    for entry in entries:
        match = _PINNED.fullmatch(entry.strip()) if isinstance(entry, str) else None
        if match is None or versions.get(canonical(match.group("name"))) != match.group("version"):
            missing.append(entry)
    return missing
