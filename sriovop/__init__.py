"""sriovop: an SR-IOV network operator for Kubernetes, API-compatible with sriovnetwork.openshift.io/v1."""

__version__ = "0.1.0"
