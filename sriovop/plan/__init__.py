"""`sriovop plan` and `sriovop explain`: read-only answers computed with the operator's, the webhook's and
the daemon's own decision code."""
