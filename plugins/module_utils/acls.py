"""ACLs as code: declared permissions against the cluster's.

A declaration is operator-shaped and expands to Kafka's ACL entries:

    {"principal": "User:etl", "resource": {"type": "topic", "name": "orders", "pattern": "prefixed"},
     "operations": ["read", "describe"], "permission": "allow", "host": "*"}

An entry is the tuple (principal, host, resource type, resource name,
pattern, operation, permission), lower case, so declared and described
entries compare as they are.
"""

from __future__ import annotations

RESOURCE_TYPES = ("topic", "group", "cluster", "transactional_id", "delegation_token", "user")
PATTERNS = ("literal", "prefixed")
OPERATIONS = (
    "all", "read", "write", "create", "delete", "alter", "describe", "cluster_action",
    "describe_configs", "alter_configs", "idempotent_write", "create_tokens", "describe_tokens",
)  # fmt: skip
PERMISSIONS = ("allow", "deny")
FIELDS = {"principal", "resource", "operations", "permission", "host"}


class AclError(ValueError):
    pass


def _where(index, item):
    return f"ACL #{index} ({item.get('principal', '?')})" if isinstance(item, dict) else f"ACL #{index}"


def normalize(declared):
    """The set of entries the declarations stand for; refuses what Kafka would."""
    entries = set()
    for index, item in enumerate(declared or []):
        where = _where(index, item)
        if not isinstance(item, dict):
            raise AclError(f"{where}: an ACL is a mapping with principal, resource and operations")
        unknown = sorted(set(item) - FIELDS)
        if unknown:
            raise AclError(f"{where}: unknown field(s) {unknown}; an ACL has {sorted(FIELDS)}")
        principal = item.get("principal")
        if not isinstance(principal, str) or ":" not in principal:
            raise AclError(f"{where}: principal must be like User:name, got {principal!r}")
        resource = item.get("resource") or {}
        kind = str(resource.get("type", "")).lower()
        if kind not in RESOURCE_TYPES:
            raise AclError(f"{where}: resource type {resource.get('type')!r} is not one of {', '.join(RESOURCE_TYPES)}")
        name = "kafka-cluster" if kind == "cluster" else resource.get("name")
        if not isinstance(name, str) or not name:
            raise AclError(f"{where}: a {kind} resource needs a name")
        pattern = str(resource.get("pattern", "literal")).lower()
        if pattern not in PATTERNS:
            raise AclError(f"{where}: pattern {pattern!r} is not one of {', '.join(PATTERNS)}")
        operations = item.get("operations")
        if not isinstance(operations, list) or not operations:
            raise AclError(f"{where}: operations must be a list, for example [read, describe]")
        permission = str(item.get("permission", "allow")).lower()
        if permission not in PERMISSIONS:
            raise AclError(f"{where}: permission {permission!r} is not allow or deny")
        host = str(item.get("host", "*"))
        for operation in operations:
            op = str(operation).lower()
            if op not in OPERATIONS:
                raise AclError(f"{where}: operation {operation!r} is not one of {', '.join(OPERATIONS)}")
            entries.add((principal, host, kind, name, pattern, op, permission))
    return entries


def plan(declared, current, remove_undeclared=False):
    """{"create": [entries], "delete": [entries]}: what is declared and missing, and what is extra (when asked)."""
    return {
        "create": sorted(declared - current),
        "delete": sorted(current - declared) if remove_undeclared else [],
    }


def label(entry):
    principal, host, kind, name, pattern, op, permission = entry
    where = f"{kind} {name}" + ("*" if pattern == "prefixed" else "")
    return f"{permission} {principal} {op} on {where}" + ("" if host == "*" else f" from {host}")


def summary(changes):
    return [f"acl add: {label(e)}" for e in changes["create"]] + [f"acl remove: {label(e)}" for e in changes["delete"]]
