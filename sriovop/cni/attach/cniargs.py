"""CNI_ARGS (`K=V;K=V`) as the runtime passes it, and the args each delegate receives.

Delegates get `IgnoreUnknown=true` first, so plugins that check their args (host-local, macvlan) accept
the Kubernetes keys they do not know, exactly as Multus passes them on.
"""

from __future__ import annotations

from dataclasses import dataclass

from sriovop.cni.errors import INVALID_ENV, CniError

POD_KEYS = ("K8S_POD_NAMESPACE", "K8S_POD_NAME", "K8S_POD_INFRA_CONTAINER_ID", "K8S_POD_UID")


def parse(value: str) -> list[tuple[str, str]]:
    """Pairs in their order; an element without `=` is a malformed environment (CNI spec)."""
    pairs: list[tuple[str, str]] = []
    for item in value.split(";"):
        if not item:
            continue
        key, eq, val = item.partition("=")
        if not eq:
            raise CniError(INVALID_ENV, "CNI_ARGS is malformed", f"element {item!r} has no '='")
        pairs.append((key, val))
    return pairs


def render(pairs: list[tuple[str, str]]) -> str:
    return ";".join(f"{k}={v}" for k, v in pairs)


@dataclass(frozen=True)
class PodArgs:
    namespace: str
    name: str
    infra_container_id: str = ""
    uid: str = ""

    @classmethod
    def from_cni_args(cls, value: str) -> PodArgs | None:
        """The pod the runtime is setting up, or None when CNI_ARGS names none (not a Kubernetes call)."""
        args = dict(parse(value))
        if not args.get("K8S_POD_NAMESPACE") or not args.get("K8S_POD_NAME"):
            return None
        return cls(args["K8S_POD_NAMESPACE"], args["K8S_POD_NAME"],
                   args.get("K8S_POD_INFRA_CONTAINER_ID", ""), args.get("K8S_POD_UID", ""))


def delegate_args(incoming: str, pod: PodArgs | None) -> str:
    """`IgnoreUnknown=true;K8S_POD_NAMESPACE=..;K8S_POD_NAME=..;K8S_POD_INFRA_CONTAINER_ID=..;K8S_POD_UID=..`
    followed by any other key the runtime passed (the runtime's own values win for the pod keys)."""
    pairs: list[tuple[str, str]] = [("IgnoreUnknown", "true")]
    given = parse(incoming)
    known = dict(given)
    if pod is not None:
        fallback = dict(zip(POD_KEYS, (pod.namespace, pod.name, pod.infra_container_id, pod.uid), strict=True))
        pairs += [(k, known.get(k) or fallback[k]) for k in POD_KEYS]
    taken = {k for k, _ in pairs}
    pairs += [(k, v) for k, v in given if k not in taken]
    return render(pairs)
