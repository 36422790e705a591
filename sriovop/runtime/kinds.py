"""Identity of a Kubernetes resource type, enough to build its REST paths without discovery."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Kind:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection_path(self, namespace: str | None = None) -> str:
        """The URL path of the collection; namespace None means all namespaces (or a cluster-scoped kind)."""
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"

    def object_path(self, name: str, namespace: str | None = None) -> str:
        if self.namespaced and not namespace:
            raise ValueError(f"{self.kind} is namespaced: a namespace is needed to address {name!r}")
        return f"{self.collection_path(namespace)}/{name}"

    def __str__(self) -> str:
        return f"{self.kind}.{self.group or 'core'}/{self.version}"


NAMESPACE = Kind("", "v1", "Namespace", "namespaces", namespaced=False)
NODE = Kind("", "v1", "Node", "nodes", namespaced=False)
POD = Kind("", "v1", "Pod", "pods")
CONFIG_MAP = Kind("", "v1", "ConfigMap", "configmaps")
SECRET = Kind("", "v1", "Secret", "secrets")
SERVICE = Kind("", "v1", "Service", "services")
SERVICE_ACCOUNT = Kind("", "v1", "ServiceAccount", "serviceaccounts")
EVENT = Kind("", "v1", "Event", "events")
LEASE = Kind("coordination.k8s.io", "v1", "Lease", "leases")
DAEMON_SET = Kind("apps", "v1", "DaemonSet", "daemonsets")
DEPLOYMENT = Kind("apps", "v1", "Deployment", "deployments")
POD_DISRUPTION_BUDGET = Kind("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets")
CUSTOM_RESOURCE_DEFINITION = Kind(
    "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", namespaced=False
)
VALIDATING_WEBHOOK_CONFIGURATION = Kind(
    "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
    "validatingwebhookconfigurations", namespaced=False,
)
MUTATING_WEBHOOK_CONFIGURATION = Kind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration",
    "mutatingwebhookconfigurations", namespaced=False,
)
CLUSTER_ROLE = Kind("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", namespaced=False)
CLUSTER_ROLE_BINDING = Kind(
    "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", namespaced=False
)
ROLE = Kind("rbac.authorization.k8s.io", "v1", "Role", "roles")
ROLE_BINDING = Kind("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings")
