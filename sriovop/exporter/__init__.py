"""`sriovop metrics-exporter`: upstream's sriov-network-metrics-exporter series, per VF and per pod."""
