"""The roles' documented interface: defaults, argument specs and docs/variables.md agree."""

import inspect
import os
import re
from pathlib import Path

import pytest
import yaml
from distlib.manifest import Manifest

from ansible_collections.stretch.kafka.plugins.module_utils import platforms
from testkit import docs_plugins, docs_variables

REPO = Path(__file__).resolve().parents[2]


def defaults(role):
    path = REPO / "roles" / role / "defaults" / "main.yml"
    return (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}


@pytest.mark.parametrize("role", docs_variables.ROLES)
def test_every_default_is_documented_in_the_argument_specs_with_the_same_value(role):
    documented = docs_variables.options(role)
    for name, value in defaults(role).items():
        assert name in documented, f"{role}: {name} has a default but no argument spec"
        assert documented[name].get("default") == value, f"{role}: {name}'s spec default differs from defaults/main.yml"


@pytest.mark.parametrize("role", docs_variables.ROLES)
def test_every_documented_default_is_a_real_default(role):
    """A spec that promises a default the role does not have would document behaviour nobody gets."""
    have = defaults(role)
    for name, spec in docs_variables.options(role).items():
        if "default" in spec:
            assert name in have, f"{role}: {name}'s spec has a default, defaults/main.yml has none"


def platforms_tested():
    """The platform the roles are tested on: the Debian suites the testbed's node images are built from, which
    must be the releases the roles accept (module_utils/platforms.py)."""
    script = (REPO / "testbed" / "build-image.sh").read_text()
    suites = re.findall(r"^  (\w+)\) java=", script, re.MULTILINE)
    assert suites, "testbed/build-image.sh: no release found in its case of releases"
    assert list(platforms.SUPPORTED) == ["Debian"]
    assert suites == list(platforms.SUPPORTED["Debian"].values()), "the images' releases and the supported ones"
    return {"name": "Debian", "versions": suites}


@pytest.mark.parametrize("role", sorted(path.name for path in (REPO / "roles").iterdir()))
def test_a_roles_platforms_are_the_one_it_is_tested_on(role):
    meta = yaml.safe_load((REPO / "roles" / role / "meta" / "main.yml").read_text())
    assert meta["galaxy_info"]["platforms"] == [platforms_tested()], f"{role}: meta/main.yml's platforms"


@pytest.mark.parametrize("role", docs_variables.ROLES)
def test_every_variable_carries_its_roles_prefix(role):
    for name in docs_variables.options(role):
        assert name.startswith(f"{role}_"), f"{role}: {name} does not start with {role}_"


def test_every_role_is_documented_and_every_entry_point_has_a_spec():
    assert sorted(docs_variables.ROLES) == sorted(p.name for p in (REPO / "roles").iterdir())
    for role in docs_variables.ROLES:
        files = list((REPO / "roles" / role / "tasks").glob("*.yml"))
        entries = set(docs_variables.specs(role))
        # A file the role's own tasks include is a part of it; any other is an entry point.
        internal = {Path(name).stem for f in files for name in included_tasks(yaml.safe_load(f.read_text()))}
        assert {f.stem for f in files} - internal - entries == set(), f"{role}: task files without an argument spec"
        assert entries - {f.stem for f in files} == set(), f"{role}: argument specs of entry points that do not exist"


def included_tasks(node):
    """The task files a task list includes or imports by a fixed name."""
    if isinstance(node, dict):
        for key in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
            value = node.get(key)
            name = value.get("file") if isinstance(value, dict) else value
            if isinstance(name, str) and "{{" not in name:
                yield name
        for value in node.values():
            yield from included_tasks(value)
    elif isinstance(node, list):
        for item in node:
            yield from included_tasks(item)


def test_docs_variables_md_is_generated_from_the_specs():
    assert (REPO / "docs" / "variables.md").read_text() == docs_variables.render(), "run `make docs`"


COLLECTION = "stretch.kafka."


def role_of(name):
    """The role a fully qualified name (stretch.kafka.kafka_node) names within the collection; the name as it is
    otherwise, which no role of the collection has."""
    return name.removeprefix(COLLECTION) if name.startswith(COLLECTION) else name


def role_references(node):
    """Every role an Ansible YAML document names, as written: include_role, import_role, roles: and dependencies."""
    if isinstance(node, dict):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            if isinstance(node.get(key), dict):
                yield node[key]["name"]
        for key in ("roles", "dependencies"):
            if isinstance(node.get(key), list):
                for entry in node[key]:
                    yield entry["role"] if isinstance(entry, dict) else entry
        for value in node.values():
            yield from role_references(value)
    elif isinstance(node, list):
        for item in node:
            yield from role_references(item)


def test_every_role_a_playbook_or_role_includes_exists():
    roles = {p.name for p in (REPO / "roles").iterdir()}
    files = [*(REPO / "playbooks").glob("*.yml"), *(REPO / "roles").glob("*/tasks/*.yml"),
             *(REPO / "roles").glob("*/meta/main.yml")]  # fmt: skip
    named = {(str(f.relative_to(REPO)), r) for f in files for r in role_references(yaml.safe_load(f.read_text()))}
    assert named, "no role reference found: the walk is broken"
    # By the collection's name, so the roles resolve the same from a checkout and from an installed artifact.
    assert [(f, r) for f, r in sorted(named) if not r.startswith(COLLECTION) or role_of(r) not in roles] == []


def owner(name):
    """The role a variable's name says it belongs to: the role with the longest prefix of it."""
    return max((role for role in docs_variables.ROLES if name.startswith(f"{role}_")), key=len, default=None)


def defined_names(node, role):
    """(variable, the role that may define it) for every variable a task list defines or passes on.

    set_fact, register and loop_var define the role's own variables; the vars
    of a task that includes another role's entry point are that role's arguments.
    """
    if isinstance(node, list):
        for item in node:
            yield from defined_names(item, role)
        return
    if not isinstance(node, dict):
        return
    included = next(
        (
            role_of(node[k]["name"])
            for k in ("ansible.builtin.include_role", "ansible.builtin.import_role")
            if k in node
        ),
        None,
    )
    for name in node.get("vars") or {}:
        yield name, included or role
    for name in node.get("ansible.builtin.set_fact") or {}:
        yield name, role
    if "register" in node:
        yield node["register"], role
    if (node.get("loop_control") or {}).get("loop_var"):
        yield node["loop_control"]["loop_var"], role
    for key in ("block", "rescue", "always"):
        yield from defined_names(node.get(key) or [], role)


@pytest.mark.parametrize("role", docs_variables.ROLES)
def test_every_variable_a_role_defines_is_named_for_that_role_and_no_other(role):
    """A role owns its names: kafka_ is the kafka role's prefix, kafka_node_ the kafka_node role's, and so on."""
    root = REPO / "roles" / role
    found = [(name, role) for name in defaults(role)]
    found += [(name, role) for name in docs_variables.options(role)]
    if (root / "vars" / "main.yml").exists():
        found += [(name, role) for name in yaml.safe_load((root / "vars" / "main.yml").read_text())]
    for path in sorted((root / "tasks").glob("*.yml")):
        found += list(defined_names(yaml.safe_load(path.read_text()), role))
    assert found, f"{role}: no variable found: the walk is broken"
    wrong = sorted({(name, want) for name, want in found if not name.startswith("ansible_") and owner(name) != want})
    assert wrong == [], f"{role}: variables named for another role than the one that defines them: {wrong}"


def role_calls(node):
    """(role, entry point) of every include_role and import_role in an Ansible YAML document."""
    if isinstance(node, dict):
        for key in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if isinstance(node.get(key), dict):
                yield role_of(node[key]["name"]), Path(node[key].get("tasks_from") or "main").stem
        for value in node.values():
            yield from role_calls(value)
    elif isinstance(node, list):
        for item in node:
            yield from role_calls(item)


def test_roles_call_each_other_only_through_entry_points_with_argument_specs():
    """Another role's task file is reached through an entry point its argument specs declare, never as a part."""
    calls = []
    for path in [*(REPO / "playbooks").glob("*.yml"), *(REPO / "roles").glob("*/tasks/*.yml")]:
        caller = path.parts[-3] if path.parts[-2] == "tasks" else None
        found = role_calls(yaml.safe_load(path.read_text()))
        calls += [(str(path.relative_to(REPO)), role, entry) for role, entry in found if role != caller]
    assert calls, "no call between roles found: the walk is broken"
    assert [(f, r, e) for f, r, e in calls if e not in docs_variables.specs(r)] == []


def test_docs_plugins_md_is_generated_from_the_collections_own_documentation():
    assert (REPO / "docs" / "plugins.md").read_text() == docs_plugins.render(), "run `make docs`"


@pytest.mark.parametrize("kind", ["module", "filter"])
def test_ansible_doc_documents_every_module_and_filter(kind):
    """`ansible-doc -l` lists exactly the collection's plugins of the kind, none of them UNDOCUMENTED."""
    names = docs_plugins.module_names() if kind == "module" else list(docs_plugins.filter_functions())
    listed = docs_plugins.listed(kind)
    assert sorted(listed) == sorted(names), f"ansible-doc -t {kind} -l lists other plugins than the collection has"
    assert sorted(name for name, text in listed.items() if text == "UNDOCUMENTED") == []


def sidecar(name):
    path = REPO / "plugins" / "filter" / f"{name}.yml"
    return yaml.safe_load(path.read_text()) if path.exists() else None


def test_every_filter_has_documentation_of_its_own_name_and_arguments():
    """A filter's plugins/filter/<name>.yml documents its name, and one positional argument per parameter of the
    function it calls, required exactly when the parameter has no default."""
    functions = docs_plugins.filter_functions()
    assert len(functions) > 40, "no filter found: the walk is broken"
    sidecars = {path.stem for path in (REPO / "plugins" / "filter").glob("*.yml")}
    assert sorted(set(functions) - sidecars) == [], "filters without their plugins/filter/<name>.yml"
    assert sorted(sidecars - set(functions)) == [], "plugins/filter/*.yml of filters that do not exist"
    wrong = []
    for name, func in functions.items():
        doc = sidecar(name)["DOCUMENTATION"]
        positional = [p.strip() for p in str(doc.get("positional") or "").split(",") if p.strip()]
        params = list(inspect.signature(func).parameters.values())
        required = [p.default is inspect.Parameter.empty for p in params]
        documented = [bool((doc.get("options") or {}).get(p, {}).get("required")) for p in positional]
        if doc["name"] != name or sorted(doc.get("options") or {}) != sorted(positional) or documented != required:
            wrong.append(f"{name}: documents {positional} (required {documented}), takes {[p.name for p in params]}")
    assert wrong == []


def test_a_plugin_is_internal_in_its_short_description_exactly_when_its_description_says_so():
    modules, filters = docs_plugins.collection_docs()
    wrong = [
        name
        for name, entry in [*modules.items(), *filters.items()]
        if docs_plugins.is_internal(entry["doc"])
        != entry["doc"]["short_description"].startswith(docs_plugins.INTERNAL_PREFIX)
    ]
    assert wrong == []


def shipped_files():
    """The files the artifact ships, relative to the checkout: galaxy.yml's manifest, as ansible-galaxy applies it,
    and README.md (the build ships README.collection.md under that name)."""
    manifest = Manifest(str(REPO))
    for directive in yaml.safe_load((REPO / "galaxy.yml").read_text())["manifest"]["directives"]:
        manifest.process_directive(directive)
    return {str(Path(path).relative_to(REPO)) for path in manifest.files} | {"README.md"}


def shipped_markdown():
    """(path in the checkout, path in the artifact) of every Markdown file the artifact ships."""
    pages = [(name, name) for name in sorted(shipped_files()) if name.endswith(".md") and name != "README.md"]
    readme = REPO / "README.collection.md"  # the artifact's README.md
    return pages + ([("README.collection.md", "README.md")] if readme.exists() else [])


CODE = re.compile(r"^(```|~~~).*?^\1[^\n]*$|`[^`\n]*`", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$", re.MULTILINE)


def relative_links(text):
    """The relative link targets of a Markdown text, outside code, without their #fragment."""
    for match in LINK.finditer(CODE.sub("", text)):
        target = match.group(1) or match.group(2)
        if not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) and not target.startswith("#"):
            yield target.split("#", 1)[0]


def dead_links(pages, shipped):
    """(page, target) of every relative link that resolves to nothing the artifact ships (a directory counts when
    it ships a file)."""
    dead = []
    for source, installed in pages:
        for target in relative_links((REPO / source).read_text()):
            resolved = os.path.normpath(str(Path(installed).parent / target))
            if resolved not in shipped and not any(name.startswith(resolved + "/") for name in shipped):
                dead.append((installed, target))
    return dead


def test_every_relative_link_of_a_shipped_page_resolves_inside_the_artifact():
    pages, shipped = shipped_markdown(), shipped_files()
    assert {"docs/plugins.md", "docs/variables.md", "CHANGELOG.md"} <= {page for _source, page in pages}
    assert "tests/unit/test_docs.py" not in shipped, "the manifest is misread"
    assert "examples/consumer/requirements.yml" in shipped, "the manifest is misread"
    assert dead_links(pages, shipped) == []


def test_the_link_check_finds_links_into_what_does_not_ship(tmp_path):
    text = "[a](../tests/unit) [b](variables.md#kafka) `[c](../testkit)`\n\n```\n[d](../testbed)\n```\n[e]: ../x.md\n"
    assert list(relative_links(text)) == ["../tests/unit", "variables.md", "../x.md"]
    page = tmp_path / "page.md"
    page.write_text(text)
    pages = [(str(page), "docs/page.md")]
    assert dead_links(pages, {"docs/variables.md"}) == [("docs/page.md", "../tests/unit"), ("docs/page.md", "../x.md")]


def test_every_plugin_role_and_playbook_a_shipped_page_names_exists():
    """docs/collection.md once listed filters that never existed; a stretch.kafka.<name> in a page that ships
    names a module, filter, role or playbook of the collection (or its admin action group)."""
    known = {*docs_plugins.module_names(), *docs_plugins.filter_functions(), "admin"}
    known |= {path.name for path in (REPO / "roles").iterdir()} | {p.stem for p in (REPO / "playbooks").glob("*.yml")}
    named = {
        (page, name)
        for source, page in shipped_markdown()
        for name in re.findall(r"(?<![\w.])stretch\.kafka\.([a-z_]+)", (REPO / source).read_text())
    }
    assert named, "no stretch.kafka.<name> found: the walk is broken"
    assert sorted((page, name) for page, name in named if name not in known) == []


def test_docs_collection_md_says_what_each_module_utils_holds():
    """The one hand-kept table left: where the logic lives, one row naming each of plugins/module_utils."""
    table = (REPO / "docs" / "collection.md").read_text().split("| module_utils | what it holds |", 1)[1]
    rows = re.findall(r"^\| ([^|]+) \|", table.split("\n\n", 1)[0], re.MULTILINE)
    named = {name.strip("` ") for row in rows for name in row.split(",")} - {"---"}
    assert named == {path.stem for path in (REPO / "plugins" / "module_utils").glob("*.py")}
