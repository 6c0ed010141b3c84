"""Ansible module: a host's kernel settings (sysctl), applied now and kept for boot."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_settings
short_description: "Internal: Apply kernel settings (sysctl) now and keep them for boot"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Writes each setting whose value in C(/proc/sys) differs, and writes the settings it owns into a
    C(sysctl.d) file so they apply again at boot. A second run with the same settings changes nothing.
  - In a container some settings belong to the host, as C(/proc/sys) is read-only there or the setting is
    not namespaced. Those are left alone and reported as C(host_owned) with a warning, never a failure.
    On a host that is not a container a setting that cannot be written fails the task, naming it.
  - Supports check mode and diff mode.
options:
  settings:
    description: The settings, C(name) (as C(sysctl) names them, C(net.ipv4.tcp_rmem)) to its value.
    type: dict
    required: true
  file:
    description: The C(sysctl.d) file that keeps the settings for boot.
    type: path
    default: /etc/sysctl.d/60-kafka.conf
"""

EXAMPLES = r"""
- name: Size the TCP buffers for the WAN and set the memory settings Kafka wants
  stretch.kafka.kernel_settings:
    settings:
      net.ipv4.tcp_rmem: "4096 131072 79691776"
      vm.swappiness: "1"
"""

RETURN = r"""
applied:
  description: The settings this host owns, as they are now.
  returned: always
  type: dict
written:
  description: The settings that were written (or would be, in check mode).
  returned: always
  type: dict
host_owned:
  description: The settings left to the container's host, each with C(wanted) and C(current).
  returned: always
  type: dict
container:
  description: Whether the host is a container.
  returned: always
  type: bool
"""

import os  # noqa: E402  the documentation blocks come first, as in every Ansible module

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

from ansible_collections.stretch.kafka.plugins.module_utils import kernel  # noqa: E402

# Set by podman/docker and by systemd when it runs as a container's init.
CONTAINER_MARKERS = ("/run/.containerenv", "/.dockerenv", "/run/systemd/container")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "file": {"type": "path", "default": "/etc/sysctl.d/60-kafka.conf"},
        },
        supports_check_mode=True,
    )
    wanted = {str(name): kernel.normalize(value) for name, value in module.params["settings"].items()}
    try:
        paths = {name: kernel.proc_path(name) for name in wanted}
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    container = any(os.path.exists(marker) for marker in CONTAINER_MARKERS)
    current = {name: read(path) for name, path in paths.items()}
    differ = kernel.plan(wanted, current)
    host_owned, written = {}, {}
    for name, value in differ.items():
        problem = None
        if current[name] is None:
            problem = "does not exist on this kernel"
        elif not os.access(paths[name], os.W_OK):
            problem = "cannot be written"
        elif not module.check_mode:
            try:
                with open(paths[name], "w") as f:
                    f.write(value)
            except OSError as exc:
                problem = f"could not be written ({exc.strerror})"
        if problem is None:
            written[name] = value
        elif container:
            host_owned[name] = {"wanted": value, "current": kernel.normalize(current[name] or "")}
        else:
            module.fail_json(msg=f"kernel setting {name} {problem} ({paths[name]}); wanted {value}")
    owned = {name: value for name, value in wanted.items() if name not in host_owned}
    text = kernel.sysctl_file(owned)
    before = read(module.params["file"])
    file_changed = before != text
    if file_changed and not module.check_mode:
        os.makedirs(os.path.dirname(module.params["file"]), exist_ok=True)
        with open(module.params["file"], "w") as f:
            f.write(text)
        os.chmod(module.params["file"], 0o644)
    if host_owned:
        listing = ", ".join(f"{n} (wanted {v['wanted']}, has {v['current'] or '?'})" for n, v in host_owned.items())
        module.warn(f"left to the container's host, which owns them: {listing}")
    result = {
        "changed": bool(written) or file_changed,
        "applied": owned,
        "written": written,
        "host_owned": host_owned,
        "container": container,
    }
    if module._diff and result["changed"]:
        result["diff"] = {"before": before or "", "after": text, "before_header": module.params["file"],
                          "after_header": module.params["file"]}  # fmt: skip
    module.exit_json(**result)


if __name__ == "__main__":
    main()
