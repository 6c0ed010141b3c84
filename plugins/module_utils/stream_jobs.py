"""The streaming jobs of roles/spark_stream: the inventory's entries, made whole and judged before any host.

An entry (spark_stream_jobs) names one job, which the role runs in every DC
(on that DC's Spark master) as the systemd service spark-stream-<name>:

    {"name": "orders-etl",                  # its service, its directories
     "file": "/srv/ansible/jobs/etl.py",    # a Python file on the Ansible controller, or
     "module": "orders_etl.main",           #   a module of a package the role installs (one of the two)
     "args": ["--trigger-seconds", "2"],    # its own arguments
     "group": "orders-etl",                 # its consumer group, the same in every DC; one job per group
     "topics": ["orders"],                  # what it reads
     "user": "orders-etl",                  # its Kafka user (kafka_users)
     "state": "started",                    # or stopped
     "session_timeout_ms": 6000,            # the group's session timeout and heartbeat interval
     "heartbeat_interval_ms": 1000,         #   (KIP-848 group configs, set by the job at start)
     "spark_conf": ["spark.cores.max=2"]}   # what it may take of its DC's cluster

jobs(entries, defaults) returns the entries whole (plain dicts, every key
above, with "unit"); problems(...) returns why they cannot run, each
naming the job; grants(...) is Kafka's authorizer's answer for one
principal, from the declared ACLs.
"""

from __future__ import annotations

import re

from ansible_collections.stretch.kafka.plugins.module_utils import acls, spark_security, systemd, topics

NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
FIELDS = {
    "name", "file", "module", "args", "group", "topics", "user", "state", "session_timeout_ms",
    "heartbeat_interval_ms", "spark_conf",
}  # fmt: skip
STATES = ("started", "stopped")
# What a job's user needs: its topics read (and described), its group read, and the group's configs set
# (the session timeout and heartbeat interval the job sets at start).
TOPIC_OPERATIONS = ("read", "describe")
GROUP_OPERATIONS = ("read", "describe", "describe_configs", "alter_configs")
# Operations Kafka's authorizer grants with another one.
IMPLIED = {
    "describe": ("read", "write", "delete", "alter"),
    "describe_configs": ("alter_configs",),
}


class JobError(ValueError):
    pass


def _where(index, entry):
    name = entry.get("name") if isinstance(entry, dict) else None
    return f"spark_stream_jobs[{index}] ({name})" if name else f"spark_stream_jobs[{index}]"


def jobs(entries, defaults, state=""):
    """The entries whole: defaults ({state, session_timeout_ms, heartbeat_interval_ms, spark_conf}) where an entry
    sets none, "args" [] and "unit" spark-stream-<name>; state, when given, over every entry's. Raises JobError
    naming an entry that is not a mapping or holds an unknown key; problems() judges the rest."""
    if not isinstance(entries, list):
        raise JobError(f"spark_stream_jobs must be a list of jobs, not {type(entries).__name__}")
    out = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise JobError(f"{_where(index, entry)}: a job is a mapping with name, file or module, group, topics, user")
        unknown = sorted(set(entry) - FIELDS)
        if unknown:
            raise JobError(f"{_where(index, entry)}: unknown key(s) {', '.join(unknown)} (a job has {sorted(FIELDS)})")
        job = {
            "state": defaults["state"],
            "session_timeout_ms": defaults["session_timeout_ms"],
            "heartbeat_interval_ms": defaults["heartbeat_interval_ms"],
            "spark_conf": list(defaults["spark_conf"]),
            "args": [],
            "file": "",
            "module": "",
            "user": "",
            **{k: v for k, v in entry.items() if v is not None},
        }
        if state:
            job["state"] = state
        job["unit"] = f"spark-stream-{job.get('name', '')}"
        out.append(job)
    return out


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _entry_problems(job, file_exists, provided_modules):
    name = job.get("name")
    where = f"job {name!r}" if isinstance(name, str) else "a job"
    out = []
    if not isinstance(name, str) or not NAME.fullmatch(name):
        out.append(
            f"{where}: its name must be lower-case letters, digits and dashes (its service is spark-stream-<name>)"
        )
    if bool(job["file"]) == bool(job["module"]):
        out.append(f"{where}: give it a file (a Python file on the Ansible controller) or a module, one of the two")
    elif job["file"]:
        path = str(job["file"])
        if not path.startswith("/"):
            out.append(f"{where}: its file {path!r} must be an absolute path on the controller "
                       "(for example \"{{ inventory_dir }}/../jobs/job.py\")")  # fmt: skip
        elif not path.endswith(".py") or not file_exists(path):
            out.append(f"{where}: its file {path} is missing on the controller (or is no .py file)")
    elif not isinstance(job["module"], str) or not MODULE.fullmatch(job["module"]):
        out.append(f"{where}: its module {job['module']!r} is not a Python module name")
    elif provided_modules is not None and job["module"] not in provided_modules:
        out.append(
            f"{where}: its module {job['module']} is missing: no wheel of spark_stream_wheel_dir holds it "
            "(add its package's wheel there and to spark_stream_python_packages)"
        )
    # The group, the topics and the args go into the job's systemd unit, escaped for it (module_utils/systemd.py);
    # a control character cannot be, and is named by the field (and index), never repeated.
    if not isinstance(job.get("group"), str) or not job.get("group"):
        out.append(f"{where}: it needs a group (its consumer group, the same in every DC)")
    else:
        out += [p for p in [systemd.problem(job["group"], f"{where}: its group")] if p]
    names = job.get("topics")
    if not isinstance(names, list) or not names:
        out.append(f"{where}: its topics must be a list of topic names")
    else:
        out += [
            f"{where}: its topics[{i}] is not a topic name (letters, digits, '.', '_' and '-')"
            for i, name in enumerate(names)
            if not isinstance(name, str) or not topics.NAME.fullmatch(name)
        ]
    if job["state"] not in STATES:
        out.append(f"{where}: its state {job['state']!r} is not started or stopped")
    if not isinstance(job["args"], list) or not all(isinstance(a, (str, int, float)) for a in job["args"]):
        out.append(f"{where}: its args must be a list of strings")
    else:
        out += [p for i, arg in enumerate(job["args"]) if (p := systemd.problem(arg, f"{where}: its args[{i}]"))]
    session, heartbeat = _int(job["session_timeout_ms"]), _int(job["heartbeat_interval_ms"])
    if session is None or heartbeat is None or not session > heartbeat > 0:
        out.append(
            f"{where}: its session_timeout_ms ({job['session_timeout_ms']}) must be longer than its "
            f"heartbeat_interval_ms ({job['heartbeat_interval_ms']}), which must be positive"
        )
    if not isinstance(job["spark_conf"], list):
        out.append(f"{where}: its spark_conf must be a list of KEY=VALUE settings")
    else:
        out += spark_security.override_problems(job["spark_conf"], f"{where}: its spark_conf")
    return out


def grants(entries, principal, kind, name, operation):
    """Whether the declared ACL entries (acls.normalize) let principal do operation on the resource (kind,
    name), as Kafka's authorizer would: a matching deny wins; an allow counts for every host ("*") only,
    since a job's executors may run on any host of its DC."""

    def matches(entry, permission):
        who, host, entry_kind, entry_name, pattern, op, allowed = entry
        if allowed != permission or who not in (principal, "User:*") or entry_kind != kind:
            return False
        if permission == "allow" and host != "*":
            return False
        named = (entry_name in (name, "*")) if pattern == "literal" else name.startswith(entry_name)
        return named and (op in ("all", operation) or (permission == "allow" and op in IMPLIED.get(operation, ())))

    if any(matches(entry, "deny") for entry in entries):
        return False
    return any(matches(entry, "allow") for entry in entries)


def _acl_problems(job, entries, super_users):
    principal = f"User:{job['user']}"
    if principal in super_users:
        return []
    needed = [("topic", t, op) for t in job.get("topics") or [] for op in TOPIC_OPERATIONS]
    needed += [("group", job.get("group"), op) for op in GROUP_OPERATIONS]
    lacking = [
        f"{op} on {kind} {name!r}" for kind, name, op in needed if not grants(entries, principal, kind, name, op)
    ]
    if not lacking:
        return []
    return [
        f"job {job['name']!r}: its user {job['user']!r} lacks {', '.join(lacking)}: declare them in kafka_acls "
        "(or, for one job, set kafka_stream_user, kafka_stream_group and kafka_stream_topics, which grant them)"
    ]


def modules_of(names):
    """The Python modules a wheel's file names (its namelist) hold: pkg/mod.py is pkg.mod, pkg/__init__.py pkg."""
    out = set()
    for name in names:
        if not name.endswith(".py") or ".dist-info/" in name or ".data/" in name:
            continue
        parts = name[: -len(".py")].split("/")
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if parts:
            out.add(".".join(parts))
    return out


def problems(jobs_list, users=None, declared_acls=None, super_users=(), file_exists=None, provided_modules=None):
    """Why the jobs cannot run, each naming its job: a bad entry, two jobs of one name or one group, a module
    that is missing, a user that is not declared or lacks the ACLs its group and topics need.

    users: the declared Kafka users' names, or None when the client listener
    takes no login; declared_acls: the cluster's declared ACLs (the model's
    declared.acls), or None when the cluster has no authorizer; super_users:
    its super.users; file_exists(path); provided_modules: the modules the wheel
    directory provides, or None when the packages come from an index.
    """
    file_exists = file_exists or (lambda path: False)
    out = []
    for job in jobs_list:
        out += _entry_problems(job, file_exists, provided_modules)
    for field, what in (("name", "name"), ("group", "group")):
        seen = {}
        for job in jobs_list:
            value = job.get(field)
            if isinstance(value, str) and value:
                seen.setdefault(value, []).append(str(job.get("name")))
        for value, names in sorted(seen.items()):
            if len(names) > 1:
                why = (
                    "each job needs a group of its own: two jobs in one group would split its partitions between them"
                    if field == "group"
                    else "each job is a service of its own"
                )
                out.append(f"{what} {value!r} is shared by jobs {', '.join(repr(n) for n in names)}: {why}")
    if users is not None:
        for job in jobs_list:
            if not job["user"]:
                out.append(f"job {job.get('name')!r}: it needs a user (its Kafka user, declared in kafka_users)")
            elif job["user"] not in users:
                out.append(f"job {job.get('name')!r}: its user {job['user']!r} is not declared in kafka_users")
    if declared_acls is not None:
        entries = acls.normalize(declared_acls)
        for job in jobs_list:
            if job["user"] and isinstance(job.get("group"), str) and isinstance(job.get("topics"), list):
                out += _acl_problems(job, entries, set(super_users or ()))
    return out
