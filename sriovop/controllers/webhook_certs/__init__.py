"""The operator's own webhook PKI (self-managed certificate mode): see `controller` (the decisions,
which need `cryptography`), `isolated` (the operator runs them in a child process) and `settings`.
Importing this package does not import `cryptography`."""

from sriovop.controllers.webhook_certs.base import ServingTarget, default_targets
from sriovop.controllers.webhook_certs.settings import CertMode, CertSettings, CertSettingsError

__all__ = ["CertMode", "CertSettings", "CertSettingsError", "ServingTarget", "default_targets"]
