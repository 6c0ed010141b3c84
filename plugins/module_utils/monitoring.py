"""What the kafka_monitoring role gives a Prometheus beyond the Kafka nodes' own exporters, as plain data.

Every host the node_exporter role runs on (the Kafka nodes and the Spark
hosts) is a host record:

    {"host": inventory name, "dc": its kafka_dc, "address": where Prometheus reaches it,
     "role": "broker", "controller", "broker+controller" or "spark"}

From them: the node exporters' scrape targets, the WAN probes (one prober
per DC, a blackbox exporter on that DC's first host, timing a TCP connect to
each other DC's prober: one round trip of the link), and the thresholds the
alert rules compare with, which come from the inventory and reach Prometheus
as recording rules (the rules file itself stays the same for every cluster):

    stretch_wan_rtt_alert_seconds{dc, peer_dc}       the round trip above which a link alerts
    stretch_consumer_group_lag_alert_records{group}  the lag above which a growing group alerts

Each target carries the labels node, dc, role and exporter (node, wan), so
the rules on `up` of the Kafka nodes' exporters (which carry no exporter
label) are not confused with them.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.stretch.kafka.plugins.module_utils.kernel import _number as positive_number

NODE_EXPORTER = "node"
WAN_PROBE = "wan"
# The blackbox exporter's module the WAN probe uses (roles/node_exporter writes it on each prober).
WAN_PROBE_MODULE = "stretch_wan"


def host_records(kafka_records, groups, hostvars, group_names):
    """The host records of the Kafka nodes (kafka_records, the cluster model's nodes), then of every other host of
    group_names (in inventory order), each once.

    A Kafka node is reached at its advertised host (as its JMX exporter is);
    another host at ansible_host, else its inventory name. Its DC is its
    kafka_dc; its role "spark".
    """
    records = [
        {"host": r["host"], "dc": r["dc"], "address": r["advertised_host"], "role": "+".join(sorted(r["roles"]))}
        for r in kafka_records
    ]
    seen = {r["host"] for r in records}
    for group in group_names:
        for host in groups.get(group) or []:
            if host in seen:
                continue
            seen.add(host)
            hv = hostvars[host]
            address = str(hv.get("ansible_host") or host)
            records.append({"host": host, "dc": str(hv.get("kafka_dc") or ""), "address": address, "role": "spark"})
    missing = [r["host"] for r in records if not r["dc"]]
    if missing:
        raise ValueError(f"host(s) {', '.join(missing)} have no kafka_dc: every monitored host needs its DC")
    return records


def _labels(record, exporter):
    return {"node": record["host"], "dc": record["dc"], "role": record["role"], "exporter": exporter}


def node_targets(hosts, port):
    """Prometheus file_sd target groups, one per host: its node exporter, labelled node, dc, role, exporter=node."""
    return [{"targets": [f"{h['address']}:{int(port)}"], "labels": _labels(h, NODE_EXPORTER)} for h in hosts]


def wan_probers(hosts):
    """{DC: the host that probes the WAN from it}: each DC's first host, in inventory order (Kafka nodes first)."""
    probers = {}
    for host in hosts:
        probers.setdefault(host["dc"], host)
    return {dc: host["host"] for dc, host in probers.items()}


def wan_targets(hosts, blackbox_port, node_exporter_port):
    """Prometheus file_sd target groups, one per ordered pair of DCs: the prober of dc times a TCP connect to the
    prober of peer_dc (its node exporter's port), through the blackbox exporter on the prober.

    The probe's parameters are the target group's own labels (__param_target,
    __param_module, __metrics_path__), so the scrape job needs no relabelling.
    Labelled node (the prober), dc, peer_dc, role and exporter=wan.
    """
    by_host = {h["host"]: h for h in hosts}
    probers = {dc: by_host[host] for dc, host in wan_probers(hosts).items()}
    out = []
    for dc, prober in probers.items():
        for peer_dc, peer in probers.items():
            if peer_dc == dc:
                continue
            labels = {
                **_labels(prober, WAN_PROBE),
                "peer_dc": peer_dc,
                "__metrics_path__": "/probe",
                "__param_module": WAN_PROBE_MODULE,
                "__param_target": f"{peer['address']}:{int(node_exporter_port)}",
            }
            out.append({"targets": [f"{prober['address']}:{int(blackbox_port)}"], "labels": labels})
    return out


def _dc_keys(mapping, name, dcs):
    """Problems of a {DC: value} setting whose keys must be DCs of the cluster."""
    if not isinstance(mapping, dict):
        return [f"{name} must be a mapping of DC to a number, not {mapping!r}"]
    return [
        f"{name} names DC {dc!r}, which is no DC of the cluster ({', '.join(sorted(dcs))})"
        for dc in mapping
        if dc not in dcs
    ]


def wan_rtt_thresholds(dcs, broker_dcs, link, declared, factor):
    """{(dc, peer_dc): seconds} above which the round trip between two DCs alerts, for every ordered pair of dcs.

    The round trip between the broker DCs is the link's (kafka_wan_link.rtt_ms);
    a DC that holds no broker (the tiebreaker's) declares its own round trip
    to the others in declared ({DC: ms}, kafka_monitoring_wan_rtt_ms), else it
    is taken to be the link's. A pair alerts at factor times the larger of its
    two DCs' round trips. ValueError naming the setting on bad input.
    """
    problems = _dc_keys(declared, "kafka_monitoring_wan_rtt_ms", dcs)
    if problems:
        raise ValueError("; ".join(problems))
    brokers_in = [dc for dc in declared if dc in broker_dcs]
    if brokers_in:
        raise ValueError(
            f"kafka_monitoring_wan_rtt_ms names broker DC(s) {', '.join(sorted(brokers_in))}: the round trip "
            "between the broker DCs is kafka_wan_link.rtt_ms"
        )
    base = positive_number(link.get("rtt_ms") if isinstance(link, dict) else None, "kafka_wan_link.rtt_ms")
    times = positive_number(factor, "kafka_monitoring_wan_rtt_alert_factor")
    own = {dc: positive_number(ms, f"kafka_monitoring_wan_rtt_ms.{dc}") for dc, ms in declared.items()}
    return {
        (a, b): round(times * max(own.get(a, base), own.get(b, base)) / 1000, 6)
        for a in sorted(dcs)
        for b in sorted(dcs)
        if a != b
    }


def declared_groups(stream_group, stream_topics, acls):
    """The consumer groups the inventory declares: the streaming job's (when it has topics) and every group named
    literally in the declared ACLs, sorted."""
    groups = {stream_group} if stream_topics and stream_group else set()
    for acl in acls or []:
        resource = (acl or {}).get("resource") or {}
        if resource.get("type") == "group" and resource.get("pattern", "literal") == "literal" and resource.get("name"):
            groups.add(resource["name"])
    return sorted(groups)


def lag_thresholds(alerts, groups):
    """{group: records} of kafka_monitoring_consumer_lag_alerts, each group a declared one (groups) and each
    threshold a positive number; ValueError naming every bad entry."""
    if not isinstance(alerts, dict):
        raise ValueError(f"kafka_monitoring_consumer_lag_alerts must map a group to records, not {alerts!r}")
    problems, out = [], {}
    for group, records in alerts.items():
        if group not in groups:
            known = ", ".join(groups) or "none"
            problems.append(
                f"kafka_monitoring_consumer_lag_alerts names group {group!r}, which no declared job uses "
                f"(the declared groups: {known}; kafka_stream_group, or a group named in kafka_acls)"
            )
            continue
        try:
            out[group] = positive_number(records, f"kafka_monitoring_consumer_lag_alerts.{group}")
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ValueError("; ".join(problems))
    return out


def _number_text(value):
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def threshold_rules(wan, lag):
    """The Prometheus rule file (as data) that records the thresholds: wan {(dc, peer_dc): seconds}, lag {group:
    records}. Each is a constant series with its labels; the alert rules join on them."""
    rules = [
        {"record": "stretch_wan_rtt_alert_seconds", "expr": f"vector({_number_text(s)})",
         "labels": {"dc": a, "peer_dc": b}}
        for (a, b), s in sorted(wan.items())
    ]  # fmt: skip
    rules += [
        {"record": "stretch_consumer_group_lag_alert_records", "expr": f"vector({_number_text(n)})",
         "labels": {"group": g}}
        for g, n in sorted(lag.items())
    ]  # fmt: skip
    return {"groups": [{"name": "stretch-thresholds", "rules": rules}]}


DC_NETWORK = "kafka_monitoring_dc_network"


def _network(value):
    """The network (CIDR) value names, normalized ("10.1.0.5/16" is 10.1.0.0/16); None when it names none."""
    try:
        return ipaddress.ip_network(str(value), strict=False)
    except ValueError:
        return None


def inventory_dc_networks(groups, hostvars, dcs):
    """{DC: [CIDR]} from the inventory: every host's kafka_monitoring_dc_network (a CIDR or a list of them, set
    once in its DC's group vars) is a network of its DC (kafka_dc); a DC's networks are all its hosts declare, each
    once, in address order. dcs: the DCs of the cluster.

    ValueError naming the hosts, and their DC and value, for a value that is
    not a network, a host without a DC, or a DC that is not one of dcs.
    """
    found, bad = {}, {}
    for host in groups.get("all") or []:
        hv = hostvars[host]
        value = hv.get(DC_NETWORK)
        if value in (None, "", []):
            continue
        dc = hv.get("kafka_dc") or ""
        cidrs = [value] if isinstance(value, str) else value
        if not dc:
            problem = f"{DC_NETWORK} is set on a host without kafka_dc: a network belongs to a DC"
        elif dc not in dcs:
            problem = f"{DC_NETWORK} is set for DC {dc!r}, which is no DC of the cluster ({', '.join(sorted(dcs))})"
        elif not isinstance(cidrs, list) or any(_network(c) is None for c in cidrs):
            problem = (
                f"{DC_NETWORK} of DC {dc!r} must be a network (CIDR, such as 10.1.0.0/16) or a list of them, "
                f"not {value!r}"
            )
        else:
            found.setdefault(dc, set()).update(_network(c) for c in cidrs)
            continue
        bad.setdefault(problem, []).append(host)
    if bad:
        raise ValueError("; ".join(f"{', '.join(sorted(hosts))}: {problem}" for problem, hosts in bad.items()))
    return {dc: [str(n) for n in sorted(nets, key=lambda n: (n.version, n))] for dc, nets in sorted(found.items())}


def dc_networks(networks, dcs):
    """{DC: [CIDR]} of kafka_monitoring_dc_networks (a CIDR or a list per DC), each DC a DC of the cluster, each
    network a valid one and no two DCs' networks overlapping (a member's address must name one DC); ValueError naming
    every bad entry."""
    problems = _dc_keys(networks, "kafka_monitoring_dc_networks", dcs)
    out = {}
    for dc, value in (networks if isinstance(networks, dict) else {}).items():
        cidrs = [value] if isinstance(value, str) else value
        if not isinstance(cidrs, list) or not cidrs:
            problems.append(f"kafka_monitoring_dc_networks.{dc} must be a network (CIDR) or a list of them")
            continue
        for cidr in cidrs:
            if _network(cidr) is None:
                problems.append(f"kafka_monitoring_dc_networks.{dc}: {cidr!r} is not a network (such as 10.1.0.0/16)")
        out[dc] = [str(c) for c in cidrs]
    parsed = [(dc, _network(c)) for dc, cidrs in sorted(out.items()) for c in cidrs if _network(c) is not None]
    problems += [
        f"the networks of DC {dc_a!r} ({a}) and DC {dc_b!r} ({b}) overlap: a group member's address must name one "
        "DC (kafka_monitoring_dc_network)"
        for i, (dc_a, a) in enumerate(parsed)
        for dc_b, b in parsed[i + 1 :]
        if dc_a != dc_b and a.version == b.version and a.overlaps(b)
    ]
    if problems:
        raise ValueError("; ".join(problems))
    return out
