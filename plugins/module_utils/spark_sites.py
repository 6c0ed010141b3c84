"""Each broker DC's Spark cluster, found in the inventory: its master, its secret, its workers and its network.

The smoke test reads as each broker DC on that DC's own Spark cluster. Which
cluster that is follows from the inventory alone: the hosts of the masters'
group, each in its DC (kafka_dc), with the address its daemons advertise
(spark_host, else ansible_host, else its name) and its cluster's secret
(spark_auth_secret); the workers' group gives the hosts that read for the DC.
So any inventory with Spark hosts in its DCs gets its smoke reads placed,
without naming a host twice.

clusters(groups, hostvars, masters_group, workers_group, broker_dcs) returns
    {dc: {"master": "spark://host:port", "secret": str, "hosts": [worker addresses],
          "network": CIDR (only when the DC's master sets kafka_smoke_dc_network)}}
for every broker DC, or {} when the inventory has no Spark master.
"""

from __future__ import annotations

DEFAULT_MASTER_PORT = 7077  # roles/spark's spark_master_port


class SiteError(ValueError):
    pass


def address(host, hostvars):
    """The address a Spark host's daemons advertise: spark_host, else ansible_host, else its inventory name."""
    hv = hostvars[host]
    return str(hv.get("spark_host") or hv.get("ansible_host") or host)


def clusters(groups, hostvars, masters_group, workers_group, broker_dcs):
    """Each broker DC's Spark cluster (see the module's docstring); SiteError names the host or DC in the way."""
    masters = list(groups.get(masters_group) or [])
    if not masters:
        return {}
    broker_dcs = sorted(broker_dcs)
    out, where = {}, {}
    for host in masters:
        hv = hostvars[host]
        dc = hv.get("kafka_dc")
        if not dc:
            raise SiteError(f"{host}: a Spark master ({masters_group}) without kafka_dc: its DC's reads need it")
        if dc not in broker_dcs:
            raise SiteError(
                f"{host}: a Spark master in DC {dc!r}, which has no brokers (the broker DCs: {', '.join(broker_dcs)})"
            )
        if dc in out:
            raise SiteError(f"{where[dc]} and {host} are both Spark masters of DC {dc!r}: a DC has one cluster")
        port = hv.get("spark_master_port") or DEFAULT_MASTER_PORT
        out[dc] = {"master": f"spark://{address(host, hostvars)}:{port}", "secret": hv.get("spark_auth_secret") or ""}
        if hv.get("kafka_smoke_dc_network"):
            out[dc]["network"] = str(hv["kafka_smoke_dc_network"])
        where[dc] = host
    missing = [dc for dc in broker_dcs if dc not in out]
    if missing:
        raise SiteError(
            f"broker DC {missing[0]!r} has no Spark master in {masters_group}, though "
            f"{', '.join(sorted(out))} has one: each DC's reads run on its own DC's cluster"
        )
    for dc in out:
        out[dc]["hosts"] = sorted(
            address(host, hostvars) for host in groups.get(workers_group) or [] if hostvars[host].get("kafka_dc") == dc
        )
        if not out[dc]["hosts"]:
            raise SiteError(f"DC {dc!r} has a Spark master ({where[dc]}) but no worker in {workers_group}")
    return dict(sorted(out.items()))
