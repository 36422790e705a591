"""kube-apiserver auditing for a development cluster (`sriovop dev cluster up --audit-policy FILE`).

The audit log is how a test proves that no component's request was refused by RBAC: every request
carries the authorizer's decision. The policy is copied into the cluster directory so the cluster
does not depend on the caller's file staying in place.
"""

from __future__ import annotations

import shutil
from pathlib import Path

AUDIT_LOG = "audit.log"
AUDIT_POLICY = "audit-policy.yaml"


#: --audit-log-maxsize in MB. 0 does not turn rotation off: kube-apiserver's log writer then rotates at
#: 100 MB, which a 1,000-node rollout passes, and a reader holding byte offsets loses what came before.
NO_ROTATION_MB = 1 << 20


def audit_args(directory: Path, policy: Path) -> list[str]:
    """kube-apiserver flags writing DIR/audit.log (JSON lines, no rotation) with a copy of `policy`."""
    copy = directory / AUDIT_POLICY
    if policy.resolve() != copy.resolve():
        shutil.copyfile(policy, copy)
    return [f"--audit-policy-file={copy}", f"--audit-log-path={directory / AUDIT_LOG}",
            "--audit-log-format=json", "--audit-log-maxbackup=0", f"--audit-log-maxsize={NO_ROTATION_MB}",
            "--audit-log-mode=blocking"]
