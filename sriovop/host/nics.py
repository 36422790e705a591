"""The supported-NIC table comes from sriovop.api.v1 (parsed from the `supported-nic-ids` ConfigMap);
re-exported here so host code and tests have one import for it."""

from __future__ import annotations

from sriovop.api.v1.supportednics import SupportedNics, default_supported_nics

__all__ = ["SupportedNics", "default_supported_nics"]
