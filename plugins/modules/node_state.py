"""Ansible module: what a Kafka node already has, read in one round trip."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_state
short_description: "Internal: Read what a Kafka node already has, in one round trip"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Reports the OS packages that are missing, whether the service user exists as declared,
    whether a release is unpacked, the checksum of a file, the node's meta.properties, and
    whether the running process was started with other configuration than is on disk.
  - The kafka_node role runs it first and skips every step whose result is already in place,
    so a converge that changes nothing makes few round trips.
  - Reads only; supports check mode.
options:
  packages:
    description: Debian packages that must be installed.
    type: list
    elements: str
    default: []
  user:
    description: The service user, with C(name), C(group), C(home) and C(shell).
    type: dict
  paths:
    description: Files or directories whose existence to report.
    type: list
    elements: path
    default: []
  read:
    description: Small files whose content to report (certificates; never a key).
    type: list
    elements: path
    default: []
  checksums:
    description: Files whose sha256 and sha512 to report (read once each).
    type: list
    elements: path
    default: []
  meta_properties:
    description: Where the node's meta.properties is, if formatted.
    type: path
  service:
    description: The systemd unit to report on.
    type: str
    default: kafka
  restart_check:
    description: A command that prints C(pending) when the running process started with other files than are on disk.
    type: path
"""

EXAMPLES = r"""
- name: Read what the node has
  stretch.kafka.node_state:
    packages: [openjdk-17-jre-headless]
    user: {name: kafka, group: kafka, home: /var/lib/kafka, shell: /usr/sbin/nologin}
    paths: [/opt/kafka/kafka_2.13-4.3.1/libs]
    meta_properties: /var/lib/kafka/metadata/meta.properties
    restart_check: /usr/local/sbin/kafka-restart-pending
  register: kafka_node_state
"""

RETURN = r"""
missing_packages:
  description: Packages that are not installed.
  returned: always
  type: list
  elements: str
user_ok:
  description: Whether the user and its group exist with the declared home and shell.
  returned: always
  type: bool
exists:
  description: Path to whether it exists.
  returned: always
  type: dict
content:
  description: Path to its content, or null when missing.
  returned: always
  type: dict
digests:
  description: Path to its digests, {sha256, sha512} in hex, or null when missing.
  returned: always
  type: dict
meta:
  description: The text of meta.properties, or null when the node is not formatted.
  returned: always
  type: str
service_active:
  description: Whether the service runs.
  returned: always
  type: bool
service_enabled:
  description: Whether the service starts at boot.
  returned: always
  type: bool
restart_pending:
  description: Whether the service runs, and started with other files than are on disk now.
  returned: always
  type: bool
"""

import grp  # noqa: E402  the documentation blocks come first, as in every Ansible module
import hashlib  # noqa: E402
import os  # noqa: E402
import pwd  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402


def missing_packages(module, packages):
    if not packages:
        return []
    rc, out, _err = module.run_command(["dpkg-query", "-W", "-f=${Package} ${db:Status-Status}\\n", *packages])
    installed = {line.split()[0] for line in out.splitlines() if line.endswith(" installed")}
    return [p for p in packages if p not in installed]


def user_ok(user):
    if not user:
        return True
    try:
        entry = pwd.getpwnam(user["name"])
        group = grp.getgrnam(user.get("group") or user["name"])
    except KeyError:
        return False
    return (
        entry.pw_gid == group.gr_gid
        and entry.pw_dir == user.get("home", entry.pw_dir)
        and entry.pw_shell == user.get("shell", entry.pw_shell)
    )


def read(path):
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return f.read()


def digests(path):
    """{"sha256": hex, "sha512": hex} of a file, read once; None when it is missing."""
    if not os.path.isfile(path):
        return None
    found = {"sha256": hashlib.sha256(), "sha512": hashlib.sha512()}
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            for digest in found.values():
                digest.update(block)
    return {name: digest.hexdigest() for name, digest in found.items()}


def systemctl(module, verb, unit):
    rc, out, _err = module.run_command(["systemctl", verb, unit])
    return rc == 0 and out.strip() in ("active", "enabled")


def main():
    module = AnsibleModule(
        argument_spec={
            "packages": {"type": "list", "elements": "str", "default": []},
            "user": {"type": "dict"},
            "paths": {"type": "list", "elements": "path", "default": []},
            "read": {"type": "list", "elements": "path", "default": []},
            "checksums": {"type": "list", "elements": "path", "default": []},
            "meta_properties": {"type": "path"},
            "service": {"type": "str", "default": "kafka"},
            "restart_check": {"type": "path"},
        },
        supports_check_mode=True,
    )
    p = module.params
    meta = None
    if p["meta_properties"] and os.path.isfile(p["meta_properties"]):
        with open(p["meta_properties"]) as f:
            meta = f.read()
    active = systemctl(module, "is-active", p["service"])
    pending = False
    if active and p["restart_check"] and os.path.exists(p["restart_check"]):
        rc, out, err = module.run_command([p["restart_check"]])
        if rc != 0:
            module.fail_json(msg=f"{p['restart_check']} failed (rc={rc}): {err.strip()}")
        pending = out.strip() == "pending"
    module.exit_json(
        changed=False,
        missing_packages=missing_packages(module, p["packages"]),
        user_ok=user_ok(p["user"]),
        exists={path: os.path.exists(path) for path in p["paths"]},
        content={path: read(path) for path in p["read"]},
        digests={path: digests(path) for path in p["checksums"]},
        meta=meta,
        service_active=active,
        service_enabled=systemctl(module, "is-enabled", p["service"]),
        restart_pending=pending,
    )


if __name__ == "__main__":
    main()
