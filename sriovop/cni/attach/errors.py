"""The attach plugin's own CNI error codes (100+ are plugin specific; the spec's codes and the error type
are sriovop.cni.errors). The kubelet turns a failed ADD's message into the pod's FailedCreatePodSandBox
event, so every message names the network and the field."""

from __future__ import annotations

from typing import Final

#: a delegate plugin failed (its own code is kept when it printed a CNI error)
DELEGATE_FAILED: Final = 110
#: the API server could not be asked or refused the plugin
API_FAILED: Final = 111
