"""What the WAN needs of a testbed inventory: its testbed_wan, and each DC's subnet, brokers and a node to probe."""

from __future__ import annotations


def request(hosts, wan):
    """The apply/check request from the testbed's Kafka hosts.

    hosts: [{"host", "dc", "address", "subnet", "broker"}], in inventory
    order. Returns {"wan", "subnets": {dc: cidr}, "broker_dcs", "probes":
    {dc: [container, address]}, "neighbours": {dc: address}}: the probe of a
    DC is its first node, its neighbour the second (a DC of one node has
    none), the near end a probe's round trips across the WAN are set against.
    """
    subnets, probes, neighbours = {}, {}, {}
    for h in hosts:
        subnets.setdefault(h["dc"], h["subnet"])
        if h["dc"] in probes:
            neighbours.setdefault(h["dc"], h["address"])
        probes.setdefault(h["dc"], [h["host"], h["address"]])
    return {
        "wan": wan,
        "subnets": subnets,
        "broker_dcs": sorted({h["dc"] for h in hosts if h["broker"]}),
        "probes": probes,
        "neighbours": neighbours,
    }


def read(sources):
    """request() of the inventory at sources (a path or a list of paths), read with Ansible's inventory API."""
    from ansible.inventory.manager import InventoryManager  # noqa: PLC0415  Ansible only where an inventory is read
    from ansible.parsing.dataloader import DataLoader  # noqa: PLC0415
    from ansible.plugins.loader import init_plugin_loader  # noqa: PLC0415
    from ansible.template import Templar  # noqa: PLC0415
    from ansible.vars.manager import VariableManager  # noqa: PLC0415

    init_plugin_loader()
    loader = DataLoader()
    inv = InventoryManager(
        loader=loader, sources=[str(s) for s in ([sources] if isinstance(sources, str) else sources)]
    )
    variables = VariableManager(loader=loader, inventory=inv)
    groups = inv.get_groups_dict()
    brokers = set(groups.get("kafka_brokers", []))
    hosts, wan = [], None
    for name in groups.get("kafka", []):
        hv = variables.get_vars(host=inv.get_host(name))
        templar = Templar(loader=loader, variables=hv)
        hosts.append(
            {
                "host": name,
                "dc": templar.template(hv["kafka_dc"]),
                "address": templar.template(hv["testbed_ip"]),
                "subnet": templar.template(hv["testbed_subnet"]),
                "broker": name in brokers,
            }
        )
        wan = templar.template(hv.get("testbed_wan", []))
    return request(hosts, wan)
