"""The pod side of the CNI chain: plugins whose logic runs in Python behind a tiny shim binary."""
