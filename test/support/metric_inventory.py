"""Every Prometheus series name sriovop exports, found in the source the way the code registers them.

- prometheus-client metrics and metric families (`Counter("name", ...)`, `GaugeMetricFamily(NAME, ...)`):
  the first argument, a string or a module-level string constant; a counter is exposed as `<name>_total`,
  a histogram as `_bucket`, `_sum` and `_count`;
- the families rendered as text with upstream's names (`sriov_vf_<counter>`, `sriov_kubepoddevice`,
  the exporter's `..._pod_resources_up`), read from the constants that render them;
- the process metrics of prometheus-client's default registry (the operator and the webhook serve it).
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

from sriovop.exporter.collector import UP_METRIC
from sriovop.host.vfstats import COUNTERS

PACKAGE = Path(__file__).resolve().parents[2] / "sriovop"

_KINDS = {
    "Counter": "counter", "CounterMetricFamily": "counter",
    "Gauge": "gauge", "GaugeMetricFamily": "gauge",
    "Histogram": "histogram", "HistogramMetricFamily": "histogram",
    "Summary": "summary", "SummaryMetricFamily": "summary",
}
#: prometheus-client's default registry (process collector) as served by the operator and the webhook.
DEFAULT_REGISTRY = {"process_resident_memory_bytes": "gauge", "process_cpu_seconds_total": "counter"}


def _constants(tree: ast.Module) -> dict[str, str]:
    out: dict[str, str] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant) and isinstance(value.value, str):
            out[target.id] = value.value
    return out


@functools.cache
def registered() -> dict[str, str]:
    """Metric name (as registered) -> kind, for every constructor call in sriovop/."""
    found: dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        consts = _constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name not in _KINDS:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                found[arg.value] = _KINDS[name]
            elif isinstance(arg, ast.Name) and arg.id in consts:
                found[consts[arg.id]] = _KINDS[name]
    return found


def families() -> dict[str, str]:
    """Family name (as documented: counters with `_total`) -> kind, everything sriovop exports."""
    out: dict[str, str] = {}
    for name, kind in registered().items():
        if kind == "counter" and not name.endswith("_total"):
            name += "_total"
        out[name] = kind
    for counter in COUNTERS:
        out[f"sriov_vf_{counter}"] = "counter"  # upstream's names, no _total
    out["sriov_kubepoddevice"] = "gauge"
    out[UP_METRIC] = "gauge"
    out.update(DEFAULT_REGISTRY)
    return out


def series_names() -> set[str]:
    """Every name a PromQL expression may use: families plus the histogram and summary series."""
    out: set[str] = set()
    for name, kind in families().items():
        out.add(name)
        if kind == "histogram":
            out |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
        if kind == "summary":
            out |= {f"{name}_sum", f"{name}_count"}
    return out
