"""Writes bundle.json beside the bundled wheels: each package's version, wheel and sha256.

    python release/bundle.py WHEEL_DIR PYPROJECT...

roles/python_venv reads it to install the project's own packages from the collection with pip's hash
checking (--require-hashes), and preflight reads it to refuse an artifact built without them. The versions
come from the packages' pyproject.toml, so a wheel of another version is refused here, not on a host.
"""

import hashlib
import json
import os
import sys
import tempfile
import tomllib
from pathlib import Path


def bundle(wheel_dir: Path, pyprojects: list[Path]) -> dict:
    entries = {}
    for pyproject in pyprojects:
        project = tomllib.loads(pyproject.read_text())["project"]
        name, version = project["name"], project["version"]
        wheel = wheel_dir / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        if not wheel.is_file():
            raise SystemExit(f"bundle: no wheel {wheel} for {name} {version} ({pyproject})")
        entries[name] = {
            "version": version,
            "wheel": wheel.name,
            "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest(),
        }
    return entries


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    wheel_dir = Path(argv[0])
    entries = bundle(wheel_dir, [Path(p) for p in argv[1:]])
    text = json.dumps(entries, indent=2, sort_keys=True) + "\n"
    path = wheel_dir / "bundle.json"
    # Written only when it changes, and whole (a reader, such as a test beside a rebuild, never sees it half written).
    if not path.exists() or path.read_text() != text:
        fd, partial = tempfile.mkstemp(dir=wheel_dir, prefix=".bundle-", suffix=".json")
        with os.fdopen(fd, "w") as out:
            out.write(text)
        os.chmod(partial, 0o644)
        os.replace(partial, path)


if __name__ == "__main__":
    main(sys.argv[1:])
