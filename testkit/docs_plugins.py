"""Writes docs/plugins.md from the collection's own documentation (`make docs`).

The modules' and filters' documentation as ansible-doc reads it (its JSON,
one call per kind with every name: it is slow per call), and the roles'
entry points from their meta/argument_specs.yml: one table per kind, the
public ones first, then each plugin's options. A plugin or entry point is
internal when its description opens with INTERNAL (the modules and filters
also say "Internal:" in their short description, so `ansible-doc -l` shows it).
tests/unit/test_docs.py fails when docs/plugins.md differs from this output,
or when a module or filter of the collection is undocumented.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from testkit import REPO, docs_variables

COLLECTION = "stretch.kafka"
INTERNAL = "Used by the roles; not a stable interface for playbooks of your own."
INTERNAL_PREFIX = "Internal: "
# Where ansible-doc must find the collection: this checkout, through the link in collections/.
SOURCE = REPO / "collections" / "ansible_collections" / "stretch" / "kafka"


def module_names():
    """The modules of plugins/modules (an action plugin's documentation is its module stub's)."""
    return sorted(path.stem for path in (REPO / "plugins" / "modules").glob("*.py"))


def filter_functions():
    """{filter name: the function it calls} over every FilterModule of plugins/filter (_guard unwrapped)."""
    found = {}
    for path in sorted((REPO / "plugins" / "filter").glob("*.py")):
        plugin = importlib.import_module(f"ansible_collections.stretch.kafka.plugins.filter.{path.stem}")
        for name, func in plugin.FilterModule().filters().items():
            found[name] = func.__closure__[0].cell_contents if func.__closure__ else func
    return dict(sorted(found.items()))


def ansible_doc(*args):
    """ansible-doc's JSON for args, from this checkout's collection; fails on any error it reports."""
    command = Path(sys.executable).with_name("ansible-doc")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / "collections"), ANSIBLE_NOCOLOR="1")
    result = subprocess.run(
        [str(command) if command.exists() else "ansible-doc", "--json", *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    if result.returncode != 0 or "[ERROR]" in result.stderr:
        raise RuntimeError(f"ansible-doc {' '.join(args)} failed: {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout)


def listed(kind):
    """{name: short description} of every plugin of kind that `ansible-doc -l` lists ('UNDOCUMENTED' for one
    without documentation)."""
    prefix = f"{COLLECTION}."
    return {name.removeprefix(prefix): text for name, text in ansible_doc("-t", kind, "-l", COLLECTION).items()}


def documented(kind, names):
    """{name: ansible-doc's JSON of the plugin} for every name; a name ansible-doc cannot document fails."""
    docs = ansible_doc("-t", kind, *(f"{COLLECTION}.{name}" for name in names))
    out = {}
    for name in names:
        entry = docs.get(f"{COLLECTION}.{name}")
        if not entry or not entry.get("doc"):
            raise RuntimeError(f"ansible-doc -t {kind} {COLLECTION}.{name}: no documentation")
        filename = Path(entry["doc"]["filename"])
        if SOURCE.resolve() not in filename.resolve().parents:
            raise RuntimeError(f"ansible-doc read {COLLECTION}.{name} from {filename}, not from this checkout")
        out[name] = entry
    return out


@functools.cache
def collection_docs():
    """(modules, filters): ansible-doc's JSON of every module and filter of the collection, by name."""
    return documented("module", module_names()), documented("filter", list(filter_functions()))


def is_internal(doc):
    return _lines(doc.get("description"))[:1] == [INTERNAL]


def _lines(value):
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _summary(text):
    return docs_variables._text(str(text).removeprefix(INTERNAL_PREFIX))


def _type(spec):
    return spec.get("type", "raw") + (f" of {spec['elements']}" if spec.get("elements") else "")


def _kind(spec):
    kind = _type(spec)
    default = docs_variables._default(spec)
    return f"{kind}, {default if default == 'required' else 'default ' + default}" if default else kind


def _option(name, spec):
    choices = f" One of {', '.join(f'`{c}`' for c in spec['choices'])}." if spec.get("choices") else ""
    return f"- `{name}` ({_kind(spec)}): {docs_variables._text(_lines(spec.get('description')))}{choices}"


def _ordered(docs):
    """Public first, then internal, each by name."""
    return sorted(docs.items(), key=lambda item: (is_internal(item[1]["doc"]), item[0]))


def _table(kind, docs):
    lines = [f"| {kind} | interface | what it does |", "|---|---|---|"]
    for name, entry in _ordered(docs):
        where = "internal" if is_internal(entry["doc"]) else "public"
        lines.append(f"| [`{name}`](#{kind}-{name}) | {where} | {_summary(entry['doc']['short_description'])} |")
    return lines + [""]


def admin_group():
    """The modules of the admin action group (meta/runtime.yml), which share the admin connection's options."""
    runtime = yaml.safe_load((REPO / "meta" / "runtime.yml").read_text())
    return sorted(runtime["action_groups"]["admin"])


def shared_options(modules):
    """{option: spec} that every module of the admin group documents alike: the admin connection."""
    group = [modules[name]["doc"].get("options") or {} for name in admin_group()]
    return {name: spec for name, spec in sorted(group[0].items()) if all(other.get(name) == spec for other in group)}


def _module(name, entry, shared):
    doc = entry["doc"]
    lines = [f"### module {name}", "", _summary(doc["short_description"]) + "."]
    if doc.get("has_action"):
        lines[-1] += " An action plugin: it runs on the Ansible controller first."
    lines.append("")
    options = doc.get("options") or {}
    if name in admin_group():
        lines.append(f"- the [admin connection](#the-admin-connection): {', '.join(f'`{o}`' for o in shared)}")
        options = {option: spec for option, spec in options.items() if option not in shared}
    lines += [_option(option, spec) for option, spec in sorted(options.items())]
    returns = ", ".join(f"`{key}` ({_type(value)})" for key, value in (entry.get("return") or {}).items())
    return lines + ["", f"Returns {returns}." if returns else "Returns nothing of its own.", ""]


def _filter(name, entry):
    doc = entry["doc"]
    options = doc.get("options") or {}
    positional = [p.strip() for p in str(doc.get("positional") or "").split(",") if p.strip()]
    arguments = ", ".join(p for p in positional if p != "_input")
    lines = [f"### filter {name}", "", _summary(doc["short_description"]) + ".", ""]
    lines += [f"`input | {COLLECTION}.{name}{f'({arguments})' if arguments else ''}`", ""]
    lines += [_option("input" if option == "_input" else option, options[option]) for option in positional]
    lines += [_option(option, spec) for option, spec in sorted(options.items()) if option not in positional]
    value = (entry.get("return") or {}).get("_value") or {}
    return lines + ["", f"Returns ({_type(value)}): {docs_variables._text(_lines(value.get('description')))}", ""]


def _roles():
    lines = ["| role | entry point | interface | what it does |", "|---|---|---|---|"]
    for role in docs_variables.ROLES:
        for entry, spec in docs_variables.specs(role).items():
            where = "internal" if is_internal(spec) else "public"
            call = "`roles:`" if entry == "main" else f"`tasks_from: {entry}.yml`"
            link = f"[`{role}`](variables.md#{role})"
            lines.append(f"| {link} | {call} | {where} | {_summary(spec['short_description'])} |")
    ordered = lines[:2] + sorted(lines[2:], key=lambda line: "| internal |" in line)
    return ordered + [""]


def render():
    modules, filters = collection_docs()
    lines = [
        "# Plugins and roles",
        "",
        "Generated by `make docs` from the collection's own documentation (`ansible-doc --json` of its modules and",
        "filters, each role's `meta/argument_specs.yml`); do not edit. `ansible-doc -t module stretch.kafka.<name>`",
        "(`-t filter`, `-t role`) prints the same, with examples and return values.",
        "",
        "The collection's interface is its playbooks, run by name, and the variables of",
        "[variables.md](variables.md). A public plugin or entry point may also be used in a play of your own, as",
        "the playbooks use it: the admin-protocol modules and the `kafka_admin` and `kafka_ops` entry points",
        "take their connection from `module_defaults` on `group/stretch.kafka.admin`, set to the cluster model's",
        "`kafka_cluster.admin`. An internal one is used by the roles; it is not a stable interface and may change",
        "in any release.",
        "",
        "## Modules",
        "",
        *_table("module", modules),
        "## Filters",
        "",
        *_table("filter", filters),
        "## Roles",
        "",
        "Each role's variables, their types and defaults: [variables.md](variables.md).",
        "",
        *_roles(),
        "## Modules' options",
        "",
        "### The admin connection",
        "",
        f"The modules of the `{COLLECTION}.admin` action group ({', '.join(f'`{m}`' for m in admin_group())})",
        "take these options alike; a play sets them once with `module_defaults` on the group.",
        "",
    ]
    shared = shared_options(modules)
    lines += [_option(option, spec) for option, spec in shared.items()] + [""]
    for name, entry in _ordered(modules):
        lines += _module(name, entry, shared)
    lines += ["## Filters' arguments", ""]
    for name, entry in _ordered(filters):
        lines += _filter(name, entry)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(render())
