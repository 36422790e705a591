"""How long the dev cluster waits for its daemons, stretchable on slow machines.

The deadlines (kube-apiserver ready in 60 s, nodes Ready in 5 min, ...) fit a host or a busy 2-core
CI machine. Under emulation (a TCG guest runs everything several times slower) they are too short, and
raising them for everyone would only delay the error on a cluster that is really broken. So they stay,
and `SRIOVOP_DEV_TIMEOUT_SCALE` multiplies every one of them for the runs that need it.
"""

from __future__ import annotations

import math
import os

ENV_SCALE = "SRIOVOP_DEV_TIMEOUT_SCALE"


class DeadlineScaleError(ValueError):
    """The scale in the environment is not a usable number."""


def scale() -> float:
    raw = os.environ.get(ENV_SCALE, "").strip()
    if not raw:
        return 1.0
    try:
        value = float(raw)
    except ValueError:
        raise DeadlineScaleError(f"{ENV_SCALE}={raw!r}: expected a number such as 3 or 1.5") from None
    if not math.isfinite(value) or value < 1:
        raise DeadlineScaleError(f"{ENV_SCALE}={raw!r}: must be a finite number of at least 1 "
                                 "(it only ever lengthens the deadlines)")
    return value


def scaled(seconds: float) -> float:
    """`seconds` times the scale (1 unless SRIOVOP_DEV_TIMEOUT_SCALE says otherwise)."""
    return seconds * scale()
