"""SCRAM users as code: declared users against the cluster's credentials.

A declared user is {"name", "password", "mechanism" (default the cluster's)}.
Kafka never gives a password back, so an existing credential is judged by
logging in with the declared password: a login that fails is a password to
set again (a rotation, or drift). Users that are not declared are removed
only when asked.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils.security import MECHANISMS

NAME = re.compile(r"[A-Za-z0-9._@-]{1,249}")


class UserError(ValueError):
    pass


def normalize(declared, default_mechanism):
    """{name: {"password", "mechanism"}} of the declared users; refuses what the cluster could not take."""
    users = {}
    for index, item in enumerate(declared or []):
        if not isinstance(item, dict) or not item.get("name"):
            raise UserError(f"user #{index}: each user needs a name and a password")
        name = str(item["name"])
        if not NAME.fullmatch(name):
            raise UserError(f"user #{index}: {name!r} is not a valid user name (letters, digits, '.', '_', '@', '-')")
        unknown = sorted(set(item) - {"name", "password", "mechanism"})
        if unknown:
            raise UserError(f"user '{name}': unknown field(s) {unknown}; a user has name, password, mechanism")
        if name in users:
            raise UserError(f"user '{name}' is declared more than once")
        password = item.get("password")
        if not isinstance(password, str) or len(password) < 8:
            raise UserError(f"user '{name}': the password must be a string of at least 8 characters")
        mechanism = item.get("mechanism") or default_mechanism
        if mechanism not in MECHANISMS:
            raise UserError(f"user '{name}': mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")
        users[name] = {"password": password, "mechanism": mechanism}
    return users


def plan(declared, current, logs_in, remove_undeclared=False):
    """What brings the credentials to the declared state.

    current: {user: [mechanisms it has]}. logs_in(name, password, mechanism):
    whether that login succeeds now (asked only for existing credentials).
    Returns {"set": {name: reason}, "delete": {name: [mechanisms]}}.
    """
    changes = {"set": {}, "delete": {}}
    for name, user in sorted(declared.items()):
        have = current.get(name, [])
        if user["mechanism"] not in have:
            changes["set"][name] = "new"
        elif not logs_in(name, user["password"], user["mechanism"]):
            changes["set"][name] = "the declared password does not log in"
        stale = [m for m in have if m != user["mechanism"]]
        if stale:
            changes["delete"][name] = stale
    if remove_undeclared:
        for name, have in sorted(current.items()):
            if name not in declared and have:
                changes["delete"][name] = list(have)
    return changes


def summary(changes):
    lines = [f"user {name}: set its password ({why})" for name, why in changes["set"].items()]
    lines += [f"user {name}: remove {', '.join(mechs)}" for name, mechs in changes["delete"].items()]
    return lines
