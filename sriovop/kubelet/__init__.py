"""The kubelet's local gRPC APIs on grpcio: generated stubs plus small clients and servers.

- `proto/*.proto` are the kubelet's API definitions (device plugin v1beta1, pod-resources v1, plugin
  registration v1); `*_pb2.py`, `*_pb2.pyi` and `*_pb2_grpc.py` are generated from them by
  `sriovop gen protos` (protogen.py) and never edited by hand.
- `channel.py` opens a channel to a unix socket and turns grpc.RpcError into `KubeletApiError`.
- `podresources.py` is the pod-resources client the metrics exporter uses.

Knows nothing about SR-IOV.
"""
