"""The inventory's variables against the ones the collection reads: typos, removed names, internal ones.

A variable the roles do not read is ignored by Ansible in silence, so a typo (kafka_node_log_dir for
kafka_node_log_dirs) or a name a release removed leaves the run on its defaults. Preflight therefore refuses, before
any host is touched, every host variable with one of the collection's prefixes that
- a release removed (REMOVED: the release and what replaces it);
- the collection computes itself (a role's vars/): an inventory value of it has no effect;
- no role declares in its argument specs, with the closest declared names ("did you mean").
The check refuses rather than warns: an unknown name with the collection's prefix is almost always a typo, and a
warning scrolls away while the run goes on with the defaults. Variables of the operator's own that share a prefix
are named in kafka_preflight_own_variables and pass.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

# The collection's prefixes: its roles' names, and what they share.
PREFIXES = ("kafka_", "spark_", "node_exporter_", "python_venv_", "artifact_", "platform_")

# Variables a release removed: {name: (release, what to use instead)}.
_STREAM_JOBS = "describe each job as an entry of spark_stream_jobs (docs/spark.md)"
REMOVED = {
    "spark_stream_topics": ("2.0.0", f"spark_stream_jobs[].topics; {_STREAM_JOBS}"),
    "spark_stream_group": ("2.0.0", f"spark_stream_jobs[].group; {_STREAM_JOBS}"),
    "spark_stream_package_src": ("2.0.0", f"spark_stream_jobs[].file or .module; {_STREAM_JOBS}"),
    "spark_stream_trigger_seconds": ("2.0.0", f"the job's own trigger (spark_stream_jobs[].args); {_STREAM_JOBS}"),
    "spark_stream_starting_offsets": ("2.0.0", f"the job's own options (spark_stream_jobs[].args); {_STREAM_JOBS}"),
    "spark_stream_max_records_per_partition": (
        "2.0.0",
        f"the job's own options (spark_stream_jobs[].args); {_STREAM_JOBS}",
    ),
    "spark_stream_fetch_stats": ("2.0.0", f"the job's own options (spark_stream_jobs[].args); {_STREAM_JOBS}"),
    "spark_stream_name": ("2.0.0", f"spark_stream_jobs[].name; {_STREAM_JOBS}"),
    "kafka_smoke_dc_networks": ("2.0.0", "kafka_smoke_dc_network in each DC's Spark master's variables"),
}
# The groups' names are fixed: every play's hosts: pattern names them before any variable is read, so a play over
# a renamed group matched no host and was skipped, the run ending ok.
_GROUPS = (
    "the inventory groups kafka_controllers, kafka_brokers, spark_masters and spark_workers, which every play names "
    "before any variable is read (a group of your own joins as one of their children)"
)
REMOVED.update(
    dict.fromkeys(
        ("kafka_controllers_group", "kafka_brokers_group", "spark_masters_group", "spark_workers_group",
         "spark_stream_masters_group"),
        ("2.0.0", _GROUPS),
    )
)  # fmt: skip


def _yaml(path: Path):
    import yaml  # noqa: PLC0415  only on the controller, where Ansible brings PyYAML

    # libyaml's loader where PyYAML was built with it, as Ansible's own: the same safe
    # constructors, and a sixth of the pure-Python loader's time (every preflight reads
    # every task file of the collection here).
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(path.read_text(), Loader=loader) or {}


def _walk_tasks(node, names: set[str]) -> None:
    """Names a task list registers or sets as facts, through blocks."""
    if isinstance(node, list):
        for item in node:
            _walk_tasks(item, names)
    elif isinstance(node, dict):
        if isinstance(node.get("register"), str):
            names.add(node["register"])
        for key in ("ansible.builtin.set_fact", "set_fact"):
            if isinstance(node.get(key), dict):
                names.update(k for k in node[key] if k != "cacheable")
        for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks", "handlers"):
            _walk_tasks(node.get(key), names)


@functools.lru_cache(maxsize=4)
def collection_variables(root: str) -> tuple[frozenset[str], frozenset[str]]:
    """(declared, internal) names of the collection at root: the argument specs' options; and the role vars, the
    results the tasks register and the facts they set. A run's earlier plays leave its results and facts among the
    host variables a later preflight reads (site.yml ends with spark.yml, which judges again), so those pass; a role
    var set in the inventory is refused (problems())."""
    base = Path(root)
    declared: set[str] = set()
    role_vars: set[str] = set()
    produced: set[str] = set()
    for spec in base.glob("roles/*/meta/argument_specs.yml"):
        for entry in (_yaml(spec).get("argument_specs") or {}).values():
            declared.update((entry or {}).get("options") or {})
    for path in base.glob("roles/*/vars/*.yml"):
        role_vars.update(_yaml(path))
    for pattern in ("roles/*/tasks/*.yml", "roles/*/handlers/*.yml", "playbooks/*.yml"):
        for tasks in base.glob(pattern):
            _walk_tasks(_yaml(tasks), produced)
    if not declared:
        raise ValueError(f"no argument specs found under {root}/roles: cannot judge the inventory's variables")
    return frozenset(declared), frozenset((role_vars | produced) - declared), frozenset(produced - declared)


def problems(host_names: dict, declared, internal, own=(), produced=()) -> list[str]:
    """Why the inventory's variables would be ignored, one line per variable, naming its hosts.

    host_names: {host: [variable names]}; declared, internal: the collection's names; own: the operator's;
    produced: the results and facts the collection's tasks leave (an earlier play of the same run set them).
    """
    hosts_of: dict[str, list[str]] = {}
    passes = set(declared) | set(own) | set(produced)
    for host, names in host_names.items():
        for name in names:
            if isinstance(name, str) and name.startswith(PREFIXES) and name not in passes:
                hosts_of.setdefault(name, []).append(host)
    out = []
    for name in sorted(hosts_of):
        hosts = sorted(hosts_of[name])
        where = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
        if name in REMOVED:
            release, instead = REMOVED[name]
            out.append(f"{name} (set for {where}) was removed in stretch.kafka {release}: use {instead}")
        elif name in internal:
            out.append(
                f"{name} (set for {where}) is computed by the stretch.kafka roles: an inventory value of it has no "
                "effect; remove it"
            )
        else:
            close = difflib.get_close_matches(name, sorted(declared), n=2, cutoff=0.8)
            hint = f": did you mean {' or '.join(close)}?" if close else ""
            out.append(
                f"{name} (set for {where}) is read by no role of stretch.kafka{hint} (a variable of your own with "
                "this prefix goes into kafka_preflight_own_variables)"
            )
    return out
