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


def audit_args(directory: Path, policy: Path) -> list[str]:
    """kube-apiserver flags writing DIR/audit.log (JSON lines, no rotation) with a copy of `policy`."""
    copy = directory / AUDIT_POLICY
    if policy.resolve() != copy.resolve():
        shutil.copyfile(policy, copy)
    return [f"--audit-policy-file={copy}", f"--audit-log-path={directory / AUDIT_LOG}",
            "--audit-log-format=json", "--audit-log-maxbackup=0", "--audit-log-mode=blocking"]
