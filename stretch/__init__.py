"""Tools of the stretch-cluster project outside the roles: the testbed's WAN, and what measures the cluster."""
