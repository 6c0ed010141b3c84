"""What a DC failover relaxes, and what its recovery puts back: every topic's min.insync.replicas.

After a broker DC is lost, a partition takes acks=all writes only while the
replicas it keeps outside the DC are at least its effective
min.insync.replicas. That value is the topic's own when the topic sets one
(a declared topic's config; __transaction_state is created with its own,
transaction.state.log.min.isr; share groups' state topic likewise), else the
cluster-wide one, and a cluster-wide change does not touch a topic's own. So
the failover reads every topic's effective value (internal topics included),
lowers the cluster-wide one and each topic's own that is above the failover's
target, and refuses, before anything is relaxed, when a topic would stay
unwritable all the same (fewer replicas outside the DC than the value it
would run with). Each topic's own value before the relaxation is recorded on
the surviving controllers, so that dc_recovery.yml puts exactly those back.

With Eligible Leader Replicas (KIP-966), a cluster-wide update of
min.insync.replicas clears every partition's ELR and a topic's update clears
that topic's; nothing is written that need not be (a value already at or
under the target is left alone), and after a relaxation the lost DC's
replicas no longer hold every acknowledged write, so their ELR could only
have been wrong (docs/design.md).

Everything here is plain data: DescribeConfigs replies as dicts, topics as
Admin.topics() gives them. A reply that misses a topic, carries an error, or
lacks min.insync.replicas fails closed, naming the topic.
"""

from __future__ import annotations

MIN_ISR = "min.insync.replicas"
# Kafka's ConfigSource of a value set on the topic itself.
TOPIC_OWN = 1
TRANSACTIONS = "__transaction_state"


class FailoverError(ValueError):
    pass


def _listed(items, shown=5):
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(items[:shown]) + more


def effective_min_isr(replies, topics):
    """{topic: {"value": int, "own": bool}} of every topic in topics, from DescribeConfigs replies.

    replies: [{"name", "error_code", "error_message", "configs": [{"name", "value", "source"}]}], one per topic
    resource. FailoverError naming each topic the reply does not give, gives with an error, or gives without a
    readable min.insync.replicas: a topic not read is never taken for one that needs nothing.
    """
    found, problems, answered = {}, [], set()
    for reply in replies:
        answered.add(reply.get("name"))
        if reply.get("error_code"):
            problems.append(f"{reply['name']}: {reply.get('error_message') or 'error ' + str(reply['error_code'])}")
            continue
        entry = next((c for c in reply.get("configs") or () if c.get("name") == MIN_ISR), None)
        try:
            found[reply["name"]] = {"value": int(entry["value"]), "own": entry.get("source") == TOPIC_OWN}
        except (TypeError, ValueError, KeyError):
            problems.append(f"{reply['name']}: no {MIN_ISR} in the reply")
    problems += [f"{name}: missing from the reply" for name in sorted(set(topics) - answered)]
    if problems:
        raise FailoverError(f"cannot read the {MIN_ISR} of every topic: " + "; ".join(problems))
    return {name: found[name] for name in sorted(topics)}


def plan(topics, min_isr, lost, target, cluster_relaxed, dc):
    """What the failover of dc relaxes, or why it must not.

    topics: {name: {"partitions": {p: [replica ids]}, "internal": bool}}; min_isr: effective_min_isr(); lost:
    the DC's broker ids; target: the min.insync.replicas the cluster runs with while the DC is lost
    (kafka_ops_failover_min_insync_replicas); cluster_relaxed: whether the run lowers the cluster-wide value to
    target. A topic with its own value above target has it lowered to target; the others run at target when
    the cluster-wide value is lowered, at their value otherwise. Kafka holds each partition to the fewer of that
    value and its replicas; one that keeps fewer replicas outside the DC would stay unwritable.
    Returns {"relax": {topic: its own value now}, "lower": {topic: the value it is lowered to},
    "after": {topic: the value it runs with},
    "unwritable": [why, per topic], "transactions": whether __transaction_state is relaxed}.
    """
    lost = set(lost)
    relax, after, unwritable = {}, {}, []
    for name in sorted(topics):
        now = min_isr[name]
        if now["own"]:
            value = min(now["value"], target)
            if now["value"] > target:
                relax[name] = now["value"]
        else:
            value = target if cluster_relaxed else now["value"]
        after[name] = value
        # Kafka holds a partition to the fewer of min.insync.replicas and its replicas (Partition.effectiveMinIsr).
        short = sorted(
            (p, sum(1 for r in replicas if r not in lost))
            for p, replicas in topics[name]["partitions"].items()
            if sum(1 for r in replicas if r not in lost) < min(value, len(replicas))
        )
        if short:
            fewest = min(kept for _partition, kept in short)
            unwritable.append(
                f"{name} ({len(short)} partition(s), {_listed([str(p) for p, _kept in short])}: as few as {fewest} "
                f"replica(s) outside {dc}, under its min.insync.replicas {value}"
                + (f", its own {now['value']} lowered to {value}" if name in relax else "")
                + ")"
            )
    return {"relax": relax, "lower": {name: after[name] for name in relax}, "after": after, "unwritable": unwritable,
            "transactions": TRANSACTIONS in relax}  # fmt: skip


def refusal(found, dc, target):
    """The message that refuses a failover whose plan leaves topics unwritable; "" when none would be."""
    if not found["unwritable"]:
        return ""
    return (
        f"{len(found['unwritable'])} topic(s) would stay unwritable without {dc} even at min.insync.replicas "
        f"{target}: {'; '.join(found['unwritable'])}. Nothing was relaxed: move their replicas so that enough stay "
        "outside the DC, or lower their min.insync.replicas yourself, then run dc_failover.yml again"
    )


def merge_record(dc, recorded, relax):
    """The record of what the failovers of dc relaxed, to keep on the surviving controllers: each topic's own
    min.insync.replicas before the first failover that lowered it (an earlier run's record is kept, so a second
    run, which finds the value already lowered, does not lose it). recorded: the records read (dicts, or None
    where there was none)."""
    topics = restore_values(dc, recorded)
    for name, value in relax.items():
        topics.setdefault(name, int(value))
    return {"dc": dc, "topics": dict(sorted(topics.items()))}


def restore_values(dc, recorded):
    """{topic: its own min.insync.replicas to put back} from the records read on the surviving controllers.
    FailoverError when a record is about another DC or two records disagree on a topic: never a guess."""
    topics, problems = {}, []
    for record in recorded:
        if not record:
            continue
        if record.get("dc") != dc:
            problems.append(f"a record of {record.get('dc')!r} where {dc!r}'s was expected")
            continue
        for name, value in (record.get("topics") or {}).items():
            if name in topics and topics[name] != int(value):
                problems.append(f"{name}: {topics[name]} in one record, {value} in another")
            topics.setdefault(name, int(value))
    if problems:
        raise FailoverError(f"the failover records of {dc} disagree: " + "; ".join(problems))
    return topics
