"""`sriovop device-plugin`: the SR-IOV network device plugin, interoperable with upstream's.

One concept per module:
- `config.py`      the `resourceList` file (the operator's `device-plugin-config` ConfigMap) → ResourceConfig
- `indexranges.py` the `NAME#0,2-7` suffix of pfNames/rootDevices
- `selectors.py`   one netDevice selector object and what it matches
- `devices.py`     the host's candidate network devices (PCI functions), from sriovop.host discovery
- `pools.py`       devices assigned to resources (first selector wins, duplicate names refused)
- `allocate.py`    one container's AllocateResponse: env, device specs or CDI devices
- `deviceinfo.py`  the network-attachment device-info files the CNI reads
- `rdma.py`        a device's RDMA devices and their character devices
- `cdi.py`         the CDI spec file written for `--use-cdi`
- `server.py`      the DevicePlugin gRPC service of one resource (ListAndWatch with health updates)
- `registration.py` telling the kubelet: kubelet.sock Register, or the plugin-watcher Registration service
- `manager.py`     the process: pools → servers → registration; socket watch, health polls, config reload
"""
