"""The seeded fault soak: a random schedule of faults over the WAN under steady load, judged by an independent
verifier (docs/faults.md).

schedule  the schedule, a pure function of the seed, the duration and the cluster's shape
faults    each fault's inject and undo on the testbed, the data volume of disk-full, heal()
load      a producer and a group member in each broker DC (producer, consumer: the clients)
reader    the full read of the topic after healing
verify    the verifier, on the clients' logs and the read only
timeline  the picture
run       the soak itself; `python -m testkit.soak` is its command line
"""
