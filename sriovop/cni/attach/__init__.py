"""The attach plugin: the subset of Multus (thin plugin) that SR-IOV needs, for clusters without Multus.

On ADD it runs the node's default network, then every NetworkAttachmentDefinition the pod names in
`k8s.v1.cni.cncf.io/networks` (with the device-plugin deviceID injected), writes
`k8s.v1.cni.cncf.io/network-status` and caches what it ran so DEL needs no API server. Clusters that
run Multus keep theirs: the formats (annotations, NAD config, device-info files) are the same.
"""
