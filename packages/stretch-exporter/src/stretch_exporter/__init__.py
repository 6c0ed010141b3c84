"""The stretch cluster's own Prometheus exporter: what no broker's JMX says.

Every interval it reads, through Kafka's admin protocol (stretch_exporter.cluster):

- each consumer group's lag per topic and partition (the partition's end
  offset less the group's committed offset, or less its log start for a
  partition a member owns and the group never committed: a job stuck before
  its first commit has its whole backlog ahead), labelled with the DC of the
  group member that owns the partition. Kafka's admin API gives a member's
  address, not its client.rack, so the DC is the one whose declared networks
  (the settings' "dc_networks") hold that address: "unassigned" when no
  member owns the partition, "unknown" when the owner's address is in no
  declared network. Per group and DC, the sum, the members and the owned
  partitions never committed, with every broker DC present (0 when it owns
  nothing);
- each partition's in-sync and eligible leader replicas (KIP-966's ELR,
  from DescribeTopicPartitions) against its min.insync.replicas: per topic
  and leader's DC, the partitions under min ISR and those of them with no
  eligible leader replica left ("offline" for a partition without a leader);
  per DC, the eligible leader replicas it holds.

/metrics serves the last read of each part (stretch_exporter.service),
through prometheus_client (its text format: every number exact). A part
whose read failed is left out, not served stale, and
stretch_exporter_read_success{part} says 0; so is a part whose last read
ended more than stale_seconds ago (its reader hangs), with
stretch_exporter_stale{part} 1: the alert rules see a failed read, never an
old figure.

The stretch.kafka collection's kafka_monitoring role installs this package
into a virtualenv on the Prometheus host and writes its settings
(stretch_exporter.settings); `stretch-exporter --config FILE` runs it.
"""
