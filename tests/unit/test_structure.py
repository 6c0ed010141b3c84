"""The project's Python imports like one installed package: no sys.path, no imports of a __main__,
tests import the code and never the other way round, and the collection holds only what its plugins use."""

import ast
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"


def python_files():
    listed = subprocess.run(["git", "ls-files", "*.py"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / name for name in listed.stdout.split()]


def imported(path):
    """The absolute names a file imports (a relative import as written, with its dots)."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            yield base
            yield from (f"{base}.{alias.name}" if node.module else base + alias.name for alias in node.names)


@pytest.fixture(scope="module")
def files():
    found = python_files()
    assert len(found) > 50, f"git ls-files found only {len(found)} Python files"
    return found


def test_no_code_touches_the_import_path(files):
    edits = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in files
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Attribute) and node.attr == "path" and getattr(node.value, "id", None) == "sys"
    ]
    assert edits == []


def test_nothing_imports_a_main_module(files):
    found = [
        f"{path.relative_to(REPO)}: {name}"
        for path in files
        for name in imported(path)
        if name.split(".")[-1] == "__main__"
    ]
    assert found == []


def test_the_code_never_imports_the_tests(files):
    found = [
        f"{path.relative_to(REPO)}: {name}"
        for path in files
        if path.relative_to(REPO).parts[0] != "tests"
        for name in imported(path)
        if name.split(".")[0] in ("tests", "conftest")
    ]
    assert found == []


def test_the_collection_holds_only_module_utils_its_plugins_import():
    utils = {path.stem for path in (PLUGINS / "module_utils").glob("*.py")}
    used = {
        name.rsplit(".", 1)[-1]
        for path in PLUGINS.rglob("*.py")
        if path.parent.name != "module_utils"
        for name in imported(path)
        if ".module_utils." in name
    }
    # module_utils import each other relatively; what a used one imports is used too.
    for _ in range(len(utils)):
        used |= {
            name.rsplit(".", 1)[-1]
            for util in used & utils
            for name in imported(PLUGINS / "module_utils" / f"{util}.py")
            if name.startswith(".") or ".module_utils." in name
        }
    assert sorted(utils - used) == []


def test_no_role_ships_application_python():
    """The roles install the project's packages (packages/) as an operator installs them; none copies a program
    out of its files/ or templates/."""
    shipped = sorted(
        str(path.relative_to(REPO))
        for path in (REPO / "roles").glob("*/*/**/*")
        if path.is_file() and path.parts[len(REPO.parts) + 2] in ("files", "templates") and ".py" in path.suffixes
    )
    assert shipped == []
