"""Process-wide knobs of the webhook, read once from flags and the environment as upstream names them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from sriovop.api.v1 import consts


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """`namespace` is the operator namespace: only policies and configs there are honoured.

    `dev_mode` mirrors upstream's `DEV_MODE=TRUE`: NICs missing from the supported list are admitted.
    """

    namespace: str = consts.DEFAULT_OPERATOR_NAMESPACE
    resource_prefix: str = consts.DEFAULT_RESOURCE_PREFIX
    dev_mode: bool = False

    @classmethod
    def from_env(cls, namespace: str | None = None, env: Mapping[str, str] | None = None) -> WebhookSettings:
        env = os.environ if env is None else env
        ns = namespace or env.get(consts.ENV_NAMESPACE, "")
        if not ns:
            raise ValueError(f"the operator namespace is unknown: pass --namespace or set ${consts.ENV_NAMESPACE}")
        prefix = env.get(consts.ENV_RESOURCE_PREFIX, consts.DEFAULT_RESOURCE_PREFIX)
        if not prefix:
            raise ValueError(f"${consts.ENV_RESOURCE_PREFIX} is set but empty; unset it or give a prefix")
        return cls(namespace=ns, resource_prefix=prefix, dev_mode=env.get(consts.ENV_DEV_MODE, "") == "TRUE")
