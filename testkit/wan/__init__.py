"""The testbed's WAN: a delay per ordered pair of DCs, put on the traffic the host routes between them."""
