"""Values the roles write into systemd units, checked and escaped for systemd (systemd.syntax(7),
systemd.unit(5), systemd.service(5), systemd.exec(5)).

A unit file is read line by line: a line break in a value would end its
setting and start a directive of the value's choosing. systemd expands
%-specifiers in nearly every setting (a group "team%iot" would become
"team" + the instance name + "ot", silently another group), and $NAME and
${NAME} in command lines. In command lines and Environment= it splits words
at whitespace, and reads C escapes inside quotes. So:

    text(value, what)          free text (Description=): % doubled
    word(value, what)          one word of a command line: % and $ doubled; double-quoted, with \\ and "
                               escaped, unless it holds only characters no syntax reads (as a shell's
                               quoting leaves them bare, so a safe value's unit reads as before)
    environment(name, value)   one Environment= assignment: NAME=value, % doubled, quoted in the same way
                               ($ is no syntax there)
    path(value, what)          a path written bare, inside a shell's command string too: only characters no
                               syntax reads (letters, digits, / . _ - + @)
    account(value, what)       a user or group name (User=, Group=), written bare: systemd's strict rules

Every one refuses a control character (a line break among them), naming
what the value is, never the value: the caller's preflight names the
variable or entry before any host is touched; these stop a template before
it writes a unit.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SAFE_PATH = re.compile(r"/[A-Za-z0-9/._+@-]*")
# What a word may hold bare: no whitespace, quote, backslash, $ or ; (the characters Python's shlex.quote
# leaves bare, % among them, doubled when written).
BARE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
ENVIRONMENT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# systemd's strict user and group names (User=, Group=); it takes others with a warning, quotes and all.
ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,30}")


class UnitValueError(ValueError):
    pass


def problem(value, what):
    """Why value cannot go into a unit at all ('' when it can): a control character would end its line."""
    if CONTROL.search(str(value)):
        return f"{what} holds a line break or another control character, which would end its line of the unit"
    return ""


def _checked(value, what):
    found = problem(value, what)
    if found:
        raise UnitValueError(found)
    return str(value)


def text(value, what="a value"):
    """Free text of a setting (Description=), with its %-specifiers made literal. A backslash at its end would
    make systemd read the unit's next line as part of it."""
    checked = _checked(value, what)
    if checked.endswith("\\"):
        raise UnitValueError(f"{what} ends in a backslash, which systemd reads as a line continued on the next")
    return checked.replace("%", "%%")


def _quoted(text_value, bare):
    """text_value quoted for systemd's word splitting, or as it is when bare."""
    if bare:
        return text_value
    return '"' + text_value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def word(value, what="a word"):
    """One word of an Exec command line, read back by systemd as value: quoted, escaped, % and $ made literal."""
    text_value = _checked(value, what)
    return _quoted(text_value.replace("%", "%%").replace("$", "$$"), BARE.fullmatch(text_value))


def environment(name, value, what=None):
    """One Environment= assignment of name to value, read back by systemd as it is."""
    if not ENVIRONMENT_NAME.fullmatch(str(name)):
        raise UnitValueError(f"{name!r} is not an environment variable's name")
    text_value = _checked(value, what or name)
    return _quoted(f"{name}={text_value.replace('%', '%%')}", BARE.fullmatch(text_value) or not text_value)


def _bare(value, what, pattern, rule):
    """value, written bare, when it fullmatches pattern; UnitValueError naming what and the rule otherwise."""
    text_value = _checked(value, what)
    if not pattern.fullmatch(text_value):
        raise UnitValueError(f"{what} {text_value!r} is not {rule}")
    return text_value


def path(value, what="a path"):
    """An absolute path written bare (in a command line, in a shell command string within one), refused unless
    it holds only letters, digits and / . _ - + @, which neither systemd nor a shell reads as syntax."""
    return _bare(value, what, SAFE_PATH, "an absolute path of letters, digits and / . _ - + @ only: the unit "
                 "writes it bare, where a space, a quote, % or $ would be read as syntax")  # fmt: skip


def account(value, what="a user"):
    """A user or group name (User=, Group=), written bare: refused unless it keeps systemd's strict rules
    (a letter or _, then letters, digits, _ and -, 31 at most), which quotes or a % would break."""
    return _bare(value, what, ACCOUNT, "a user or group name systemd takes as it is: a letter or _, then "
                 "letters, digits, _ and -, 31 at most")  # fmt: skip
