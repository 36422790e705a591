"""The admission webhook: policy defaulting, validation of the seven kinds, and pod resource injection.

Validation is pure: every rule reads the cluster only through a `ClusterView`, so the rules are tested
with plain in-memory views and the server, the CLI and the benchmark share one code path. The pod
injector (`inject`, `pod_networks`, `inject_patch`) also reads its `ControlSwitches` from a
`switches_source` (the watched `nri-control-switches` ConfigMap, parsed by `control_switches`).
"""
