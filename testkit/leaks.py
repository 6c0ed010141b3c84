"""Finds secrets in what a program printed: known secret values, and any PEM private key.

The secret-leak tests run the playbooks that handle secrets at full
verbosity and hand everything they printed to leaks(). A value is looked for
as written and as JSON would escape it (Ansible's JSON callback prints
strings escaped), and a private key by its PEM header and by every line of
the base64 body of the key files given, so a key is found even when its
header was cut off.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

PEM_PRIVATE_KEY = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----")
# A shorter base64 line is too likely to occur by chance in other output.
MIN_BODY_LINE = 24


def key_body_lines(pem):
    """The base64 lines of a PEM private key's body, long enough to be told apart from other text."""
    return [
        line.strip()
        for line in pem.splitlines()
        if line.strip() and not line.startswith("-----") and ":" not in line and len(line.strip()) >= MIN_BODY_LINE
    ]


def _forms(value):
    """A value as written, and as a JSON string would carry it."""
    escaped = json.dumps(value)[1:-1]
    return {value, escaped}


def leaks(text, secrets=None, key_files=()):
    """[(what leaked, an excerpt around it)] of text; empty when nothing leaked.

    secrets: {name: value} of the values that must not show (a value shorter
    than 8 characters is refused: it would match by chance). key_files: PEM
    private key files whose body must not show.
    """
    found = []

    def excerpt(at, length):
        start, end = max(0, at - 40), at + length + 40
        return text[start:end].replace("\n", "\\n")

    for name, value in sorted((secrets or {}).items()):
        if not isinstance(value, str) or len(value) < 8:
            raise ValueError(f"secret {name!r} is too short to look for (8 characters at least)")
        for form in _forms(value):
            at = text.find(form)
            if at >= 0:
                found.append((f"secret {name}", excerpt(at, len(form)).replace(value, "<" + name + ">")))
                break
    for match in PEM_PRIVATE_KEY.finditer(text):
        found.append(("a PEM private key header", excerpt(match.start(), len(match.group()))))
    for path in key_files:
        for line in key_body_lines(Path(path).read_text()):
            at = text.find(line)
            if at >= 0:
                found.append((f"a line of the private key in {path}", f"...{line[:8]}... at offset {at}"))
                break
    return found
