"""Every check of a name matches the whole string.

Python's `$` matches before a final line break, so a pattern anchored with
`^...$` and applied with .match() or .search() takes "dc1\\n" (what a YAML
block scalar gives) for "dc1"; the roles then write the line break into a
properties file or a systemd unit. The checks use .fullmatch(), and no
pattern in the collection's code or the packages ends in a bare `$`
(`\\s*$` is whole already: the whitespace takes the line break).
"""

import ast
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RE_CALLS = {"compile", "match", "search", "fullmatch"}


def code_files():
    listed = subprocess.run(
        ["git", "ls-files", "plugins/*.py", "packages/*/src/*.py"], cwd=REPO, capture_output=True, text=True, check=True
    )
    return [REPO / name for name in listed.stdout.split()]


def patterns(path):
    """(line, pattern) of every literal pattern given to re.compile/match/search/fullmatch in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in RE_CALLS
            and getattr(node.func.value, "id", None) == "re"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            yield node.lineno, node.args[0].value


def ends_in_a_bare_dollar(pattern):
    return pattern.endswith("$") and not pattern.endswith("\\$") and not re.search(r"\\s[*+]\$$", pattern)


def test_no_pattern_lets_a_trailing_line_break_through():
    files = code_files()
    assert len(files) > 20, f"git ls-files found only {len(files)} files"
    found = [
        f"{path.relative_to(REPO)}:{line}: {pattern!r}"
        for path in files
        for line, pattern in patterns(path)
        if ends_in_a_bare_dollar(pattern)
    ]
    assert found == [], "use .fullmatch() without anchors: " + "; ".join(found)


def test_the_scan_sees_an_anchored_pattern(tmp_path):
    source = tmp_path / "bad.py"
    source.write_text('import re\nNAME = re.compile(r"^[a-z]+$")\nOK = re.compile(r"^x\\s*$")\n')
    assert [p for _, p in patterns(source) if ends_in_a_bare_dollar(p)] == ["^[a-z]+$"]
