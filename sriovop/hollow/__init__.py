"""Hollow nodes: many Node objects, each served by a real config daemon on its own simulated host.

As kubemark's hollow kubelets do for the kubelet, this exercises the operator and the API server with
thousands of real clients without thousands of machines: every hollow node is the unchanged daemon
(`sriovop.daemon.Daemon`) with its own API client, watches and writes, on its own `SimHost`. What it
cannot exercise is anything a kubelet would do (no pods run, so drains evict nothing and the device
plugin is never restarted); docs/rollout.md lists what that leaves untested.

    fleet.py     names, labels, NIC models and PF names of N nodes (deterministic)
    worker.py    one process serving a slice of the fleet (sims + daemons), `python -m sriovop.hollow.worker`
    supervisor.py registers the Nodes, starts the workers, stops and cleans up everything
    command.py   `sriovop dev hollow-nodes`
"""
