"""Ansible module: a host's kernel settings (sysctl), applied now and kept for boot."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: kernel_settings
short_description: "Internal: Apply kernel settings (sysctl) now and keep them for boot"
author: stretch-kafka maintainers (!UNKNOWN)
description:
  - Used by the roles; not a stable interface for playbooks of your own.
  - Writes each setting whose value in C(/proc/sys) differs, reads each one written back, and writes the
    settings it owns into a C(sysctl.d) file so they apply again at boot. A second run with the same settings
    changes nothing. A value the kernel did not take (it clamps, or ignores what it cannot parse) fails the
    task, naming what the kernel has.
  - In a container the settings outside its network namespace (C(net.core.*), C(vm.*)) belong to the host,
    as they are not namespaced, so no container can set them. Those are left alone and reported as C(host_owned)
    with a warning. A namespaced one (C(net.ipv4.*), C(net.ipv6.*)) that is not as wanted and cannot be
    written fails, as the container platform sets it for the container (C(podman run --sysctl), a pod's
    sysctls), and a node whose TCP buffers are not sized for the WAN must not converge with a warning only.
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


def main():
    module = AnsibleModule(
        argument_spec={
            "settings": {"type": "dict", "required": True},
            "file": {"type": "path", "default": "/etc/sysctl.d/60-kafka.conf"},
        },
        supports_check_mode=True,
    )
    wanted = {str(name): kernel.normalize(value) for name, value in module.params["settings"].items()}
    container = any(os.path.exists(marker) for marker in CONTAINER_MARKERS)
    try:
        done = kernel.apply(wanted, container, module.check_mode)
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if done["failed"]:
        module.fail_json(msg="; ".join(done["failed"]), written=done["written"])
    host_owned = done["host_owned"]
    owned = {name: value for name, value in wanted.items() if name not in host_owned}
    text = kernel.sysctl_file(owned)
    before = kernel.read_text(module.params["file"])
    file_changed = before != text
    if file_changed and not module.check_mode:
        os.makedirs(os.path.dirname(module.params["file"]), exist_ok=True)
        with open(module.params["file"], "w") as f:
            f.write(text)
        os.chmod(module.params["file"], 0o644)
    if host_owned:
        listing = ", ".join(f"{n} (wanted {v['wanted']}, has {v['current'] or '?'})" for n, v in host_owned.items())
        module.warn(f"left to the container's host, which owns them (not namespaced): {listing}")
    result = {
        "changed": bool(done["written"]) or file_changed,
        "applied": owned,
        "written": done["written"],
        "host_owned": host_owned,
        "container": container,
    }
    if module._diff and result["changed"]:
        result["diff"] = {"before": before or "", "after": text, "before_header": module.params["file"],
                          "after_header": module.params["file"]}  # fmt: skip
    module.exit_json(**result)


if __name__ == "__main__":
    main()
