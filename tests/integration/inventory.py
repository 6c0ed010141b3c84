"""The cluster as an inventory describes it, read with Ansible's own inventory API.

Integration tests compare what the running cluster reports with this.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar
from ansible.vars.manager import VariableManager

from ansible_collections.stretch.kafka.plugins.module_utils.properties import client_properties

REPO = Path(__file__).resolve().parents[2]
ROLE_DEFAULTS = yaml.safe_load((REPO / "roles/kafka/defaults/main.yml").read_text())


@dataclass(frozen=True)
class Node:
    host: str
    node_id: int
    rack: str
    roles: tuple
    address: str
    ssh: dict

    def testinfra_spec(self):
        """testinfra.get_host arguments that reach this node as Ansible does."""
        user = self.ssh.get("ansible_user")
        target = f"{user}@{self.ssh['ansible_host']}" if user else self.ssh["ansible_host"]
        kwargs = {"ssh_extra_args": self.ssh.get("ansible_ssh_common_args") or None}
        if self.ssh.get("ansible_ssh_private_key_file"):
            kwargs["ssh_identity_file"] = self.ssh["ansible_ssh_private_key_file"]
        return f"ssh://{target}", kwargs


@dataclass(frozen=True)
class Cluster:
    inventory: str
    nodes: tuple
    client_port: int
    controller_port: int
    client_config: dict

    @property
    def brokers(self):
        return [n for n in self.nodes if "broker" in n.roles]

    @property
    def controllers(self):
        return [n for n in self.nodes if "controller" in n.roles]

    @property
    def bootstrap_servers(self):
        return ",".join(f"{n.address}:{self.client_port}" for n in self.brokers)

    @property
    def bootstrap_controllers(self):
        return ",".join(f"{n.address}:{self.controller_port}" for n in self.controllers)


def load(inventory=None):
    inventory = inventory or os.environ.get("STRETCH_INVENTORY", str(REPO / "inventories/local"))
    loader = DataLoader()
    inv = InventoryManager(loader=loader, sources=[inventory])
    variables = VariableManager(loader=loader, inventory=inv)
    groups = inv.get_groups_dict()
    nodes, settings = [], {}
    for host in dict.fromkeys(groups.get("kafka_controllers", []) + groups.get("kafka_brokers", [])):
        hv = dict(ROLE_DEFAULTS, **variables.get_vars(host=inv.get_host(host)))
        hv.setdefault("ansible_host", host)
        templar = Templar(loader=loader, variables=hv)
        roles = tuple(
            r
            for r, g in (("broker", "kafka_brokers"), ("controller", "kafka_controllers"))
            if host in groups.get(g, [])
        )
        nodes.append(
            Node(
                host=host,
                node_id=int(hv["kafka_node_id"]),
                rack=hv["kafka_rack"],
                roles=roles,
                address=templar.template(hv["kafka_advertised_host"]),
                ssh={
                    key: templar.template(hv[key])
                    for key in (
                        "ansible_host",
                        "ansible_user",
                        "ansible_ssh_private_key_file",
                        "ansible_ssh_common_args",
                    )
                    if key in hv
                },
            )
        )
        settings = hv
    listeners = settings["kafka_listeners"]
    client_listener = listeners[settings["kafka_client_listener"]]
    # The same settings the role renders into /etc/kafka/client.properties.
    client_config = client_properties(
        listeners, settings["kafka_client_listener"], settings.get("kafka_client_properties")
    )
    return Cluster(
        inventory=inventory,
        nodes=tuple(nodes),
        client_port=int(client_listener["port"]),
        controller_port=int(listeners[settings["kafka_controller_listener"]]["port"]),
        client_config=client_config,
    )
