"""Clients for the kubelet's local gRPC APIs (pod-resources), without grpcio or protobuf.

`podresources.list_pod_resources()` is what the metrics exporter uses; `grpc.Server` lets tests and
tools stand in for a device plugin. Knows nothing about SR-IOV.
"""
