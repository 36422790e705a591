"""The operator's own webhook PKI (self-managed certificate mode): see `controller` and `settings`."""

from sriovop.controllers.webhook_certs.controller import (
    ServingTarget,
    WebhookCertReconciler,
    default_targets,
)
from sriovop.controllers.webhook_certs.settings import CertMode, CertSettings, CertSettingsError

__all__ = ["CertMode", "CertSettings", "CertSettingsError", "ServingTarget", "WebhookCertReconciler",
           "default_targets"]
