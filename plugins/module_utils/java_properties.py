"""The text of a Java properties file, written so that java.util.Properties.load reads back exactly what was given.

Kafka reads server.properties and its tools' files with Properties.load(InputStream),
which takes every byte as ISO 8859-1; Spark reads its settings files as UTF-8.
The text written here is printable ASCII only, every other character as a
\\uXXXX escape (UTF-16, as Java writes them), so both read it back the same.
What the file format itself would take for syntax is escaped too: a line
break (which would end the line and start another setting of the value's
choosing), a backslash (an escape, or a line continuation at the end of a
line), whitespace at the start of a value (dropped by the reader), and in a
key the separators '=', ':' and whitespace, and '#' or '!' (which make a line a
comment). Printable ASCII values without a backslash or leading space come out
as they are, so files written before read the same and do not change.
"""

from __future__ import annotations

SHORT_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
KEY_SYNTAX = "=: #!"


def escape(text, key=False):
    """text as a properties key (key=True) or value, every character read back as it is."""
    out = []
    for i, c in enumerate(str(text)):
        if c == "\\":
            out.append("\\\\")
        elif c in SHORT_ESCAPES:
            out.append(SHORT_ESCAPES[c])
        elif not " " <= c <= "~":
            encoded = c.encode("utf-16-be")
            out.extend(f"\\u{int.from_bytes(encoded[j : j + 2], 'big'):04X}" for j in range(0, len(encoded), 2))
        elif (key and c in KEY_SYNTAX) or (c == " " and i == 0):
            out.append("\\" + c)
        else:
            out.append(c)
    return "".join(out)


def text(value):
    """The string a setting's value stands for: booleans as Java writes them, lists comma-separated."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(text(v) for v in value)
    return str(value)


def _lines(line):
    """The lines a comment line holds; an empty one is kept."""
    return str(line).splitlines() or [""]


def render(settings, comment=()):
    """A properties file: each line of comment (a string or a list of lines) as a '# ' line, then one
    key=value line per setting ({key: value}), in the order given.

    A comment never ends its line early: a line break in it starts another comment line.
    """
    lines = [part for line in ([comment] if isinstance(comment, str) else comment) for part in _lines(line)]
    head = "".join(f"# {line}\n" if line else "#\n" for line in lines)
    return head + "".join(f"{escape(k, key=True)}={escape(text(v))}\n" for k, v in settings.items())
