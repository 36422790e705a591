"""Conflicts between policies: the policy rules' (`sriovop.policyrules.peers`), with its caches."""

from sriovop.policyrules.peers import _ALIAS_CACHE, _PEER_CACHE, Peer, check_pf_conflicts, to_peer

__all__ = ["_ALIAS_CACHE", "_PEER_CACHE", "Peer", "check_pf_conflicts", "to_peer"]
