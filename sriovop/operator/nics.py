"""Loading the supported-NIC table the operator needs before any controller may run."""

from __future__ import annotations

import structlog

from sriovop.api.v1.consts import SUPPORTED_NIC_IDS_CONFIGMAP
from sriovop.api.v1.supportednics import SupportedNics
from sriovop.runtime.client import Client
from sriovop.runtime.errors import ApiError, NotFound
from sriovop.runtime.kinds import CONFIG_MAP

log = structlog.get_logger(__name__)


class SupportedNicsError(Exception):
    """The `supported-nic-ids` ConfigMap is missing, unreadable or lists no valid NIC."""


def load_supported_nics(client: Client, namespace: str) -> SupportedNics:
    where = f"ConfigMap {namespace}/{SUPPORTED_NIC_IDS_CONFIGMAP}"
    try:
        cm = client.get(CONFIG_MAP, SUPPORTED_NIC_IDS_CONFIGMAP, namespace)
    except NotFound:
        raise SupportedNicsError(
            f"{where} does not exist: apply the operator manifests (it lists the NIC models "
            "the operator may configure)") from None
    except ApiError as exc:
        raise SupportedNicsError(f"cannot read {where}: {exc}") from exc
    nics = SupportedNics.from_configmap(cm, strict=False)
    for problem in nics.errors:
        log.warning("skipping a malformed supported-nic-ids entry", error=problem)
    if not len(nics):
        raise SupportedNicsError(f"{where} lists no valid NIC model ('<vendor> <PF id> <VF id>' per entry)")
    log.info("supported NIC models loaded", models=len(nics))
    return nics
