"""`sriovop status`: a one-screen view of every node's SR-IOV state."""

from sriovop.status.model import ClusterStatus, NodeStatus, PfStatus, collect, model_names
from sriovop.status.render import render_summary, render_text

__all__ = ["ClusterStatus", "NodeStatus", "PfStatus", "collect", "model_names", "render_summary", "render_text"]
