"""Action plugin: validate the stretch-cluster inventory on the controller.

It never connects to a host: it reads node ids, racks and group membership
from the inventory, and the configuration the preflight tasks composed.
"""

from __future__ import annotations

import os

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.stretch.kafka.plugins.module_utils import kernel, security, sizing, topology

# Its options and return values are documented in plugins/modules/validate_topology.py.


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        hostvars = task_vars["hostvars"]
        nodes, install = [], {}
        for record in self._task.args.get("nodes") or []:
            hv = hostvars[record["host"]]
            nodes.append(
                dict(
                    record,
                    properties=hv.get("kafka_node_preflight_properties") or {},
                    overrides=hv.get("kafka_node_preflight_overrides") or {},
                )
            )
            if hv.get("kafka_node_preflight_install"):
                install[record["host"]] = hv["kafka_node_preflight_install"]
        args = self._task.args
        errors = topology.validate(
            nodes,
            install,
            task_vars.get("groups"),
            args.get("listeners"),
            args.get("min_insync_replicas"),
            args.get("min_insync_replicas_one_opt_in", False),
        )
        for record in self._task.args.get("nodes") or []:
            hv = hostvars[record["host"]]
            layout, limits = hv.get("kafka_node_preflight_layout"), hv.get("kafka_node_preflight_limits") or {}
            if layout:
                errors += sizing.limit_problems(
                    record["host"], layout, limits.get("kafka_node_nofile_limit"), limits.get("vm.max_map_count")
                )
        if "wan_link" in self._task.args:
            errors += kernel.link_problems(self._task.args["wan_link"])
        warnings = []
        if self._task.args.get("security"):
            provided = {n["host"]: hostvars[n["host"]].get("kafka_node_preflight_tls") or {} for n in nodes}
            found, warnings = security.check(
                self._task.args["security"], nodes, provided, _common_name, os.path.isfile, _pem_label
            )
            errors += found
        for warning in warnings:
            Display().warning(warning)
        result["changed"] = False
        if errors:
            result["failed"] = True
            result["errors"] = errors
            result["msg"] = f"inventory refused ({len(errors)} problem(s)):\n- " + "\n- ".join(errors)
        else:
            result["topology"] = topology.summary(nodes)
            result["msg"] = "inventory accepted: " + result["topology"]
            if warnings:
                result["msg"] += "; " + "; ".join(warnings)
        return result


def _common_name(path):
    from cryptography import x509  # noqa: PLC0415  only when provided certificates are judged
    from cryptography.x509.oid import NameOID  # noqa: PLC0415

    with open(path, "rb") as f:
        cert = x509.load_pem_x509_certificate(f.read())
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return names[0].value if names else None


def _pem_label(path):
    """The label of the first PEM block in the file ("PRIVATE KEY", "RSA PRIVATE KEY", ...), or None."""
    with open(path, encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("-----BEGIN ") and line.rstrip().endswith("-----"):
                return line.strip()[len("-----BEGIN ") : -len("-----")]
    return None
