"""The CNI side of sriovop: our `sriov` and `ib-sriov` plugins and the node server the static shim on
/opt/cni/bin talks to (docs/cni.md says why the logic lives in a server and not in the binary)."""
