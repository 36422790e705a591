"""The simulated SR-IOV host: a development and test stand-in for a machine with SR-IOV NICs.

A sysfs tree under a root, a network namespace with one veth per PF, and a simulated kernel that
answers writes (sriov_numvfs, driver binding, devlink, IFLA_VF_*, modules, RDMA) over a unix socket,
like the drivers it models. Production code never imports this package: it takes its kernel access as
an argument (`sriovop.host.kernel_access.KernelAccess`, the CNI's `VfKernel`), and only the
composition roots (the CLI commands with --simulated-host, the demo, the hollow nodes, the
development cluster and the tests) hand it the implementations from here (access.py, vfkernel.py).

Modules, one concept each, imported in this order (no cycle):
tree (files, PCI addresses) → models (NIC models) → devices (PFs, VFs, faults, the shared table) →
system (modules, RDMA, boots) / eswitch (devlink, representors, vDPA) → kernel (sysfs writes) →
vfconfig (IFLA_VF_*) → server (the socket); endpoint (the file naming a running simulator) → client
(KernelIO/EswitchIO over the socket) → access (the host layer's KernelAccess) → host (SimHost) →
control (faults from any process), vfkernel / vf_netdevs (the CNI's side) → cli (`python -m
sriovop.sim serve`); ovs is a real OVSDB for a simulated root.
"""
