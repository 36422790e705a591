"""summary.json and report.md (with PNG plots) from the benchmarks' JSON documents (run_all.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: Figures the summary must always carry (issues 15 and 24); a missing one is listed as such, not silently
#: absent.
REQUIRED = ("admission_p99_added_ms_5000_nodes", "operator_policy_to_nodestates_ratio_5000_nodes",
            "operator_rss_mb_5000_nodes", "informer_sync_ratio_naive_over_ours_nodes",
            "daemon_steady_requests_per_min", "cli_start_ms_over_python_floor", "cni_add_ratio_over_bridge",
            "rollout_ratio_5000_nodes", "rollout_max_unavailable_exceeded_5000_nodes",
            "rollout_requests_per_node_5000_nodes", "webhook_cpu_ms_per_admission_5000_nodes")


def summarize(docs: list[dict[str, Any]], quick: bool) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for doc in docs:
        for fig in doc.get("figures", []):
            figures[fig["name"]] = {**fig, "benchmark": doc["benchmark"]}
            if fig["unit"] == "x":  # a ratio already (documents written before benchlib said so)
                figures[fig["name"]]["ratio"] = fig["value"]
    if quick:
        _quick_stand_ins(figures)
    return {
        "quick": quick,
        "figures": figures,
        "missing": [name for name in REQUIRED if name not in figures],
        "failed_benchmarks": {d["benchmark"]: d["error"] for d in docs if "error" in d},
        "machine": {d["benchmark"]: {"start": d.get("machine_at_start"), "end": d.get("machine_at_end"),
                                     "seconds": d.get("seconds")} for d in docs},
    }


def _quick_stand_ins(figures: dict[str, Any]) -> None:
    """A quick run measures the 5,000-node figures at a small size only: each such required name then
    carries the largest size's figure, marked `quick` and naming what was measured (`measured_as`),
    with no pass/fail - so the summary has every name, and none reads as a 5,000-node result."""
    for name in REQUIRED:
        if name in figures or not name.endswith("_5000_nodes"):
            continue
        prefix = name.removesuffix("5000_nodes")
        sizes = {int(n[len(prefix):-len("_nodes")]): f for n, f in figures.items()
                 if n.startswith(prefix) and n.endswith("_nodes") and n[len(prefix):-len("_nodes")].isdigit()}
        if sizes:
            small = sizes[max(sizes)]
            figures[name] = {**small, "name": name, "quick": True, "measured_as": small["name"], "pass": None,
                             "note": f"quick run: measured at {max(sizes)} nodes, not 5,000. {small['note']}".strip()}


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "**no**"
    if isinstance(x, float):
        return f"{x:,.3f}".rstrip("0").rstrip(".")
    return str(x)


def table(summary: dict[str, Any]) -> str:
    rows = ["| figure | value | baseline | ratio | target | pass |", "|---|---|---|---|---|---|"]
    for name, f in summary["figures"].items():
        shown = f"`{name}` (quick: `{f['measured_as']}`)" if f.get("quick") else f"`{name}`"
        rows.append(f"| {shown} | {_fmt(f['value'])} {f['unit']} | {_fmt(f.get('baseline'))} | "
                    f"{_fmt(f.get('ratio'))} | {_fmt(f.get('target'))} | {_fmt(f.get('pass'))} |")
    return "\n".join(rows)


def plots(out_dir: Path, docs: list[dict[str, Any]]) -> list[str]:
    """PNG files written (none when matplotlib, the `bench` extra, is not installed)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    def save(name: str, title: str, xs: list[int], ylabel: str, lines: list[tuple[str, str, list[float]]]) -> None:
        fig, ax = plt.subplots(figsize=(6, 4))
        for label, style, ys in lines:
            ax.plot(xs, ys, style, label=label)
        ax.set_xlabel("nodes")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        written.append(name)

    written: list[str] = []
    by_name = {d["benchmark"]: d for d in docs}
    adm = by_name.get("admission_e2e", {}).get("details", {}).get("sizes", [])
    if adm:
        save("admission_latency.png", "Admission through kube-apiserver (median of rounds)", [s["nodes"] for s in adm],
             "dry-run policy create latency (ms)",
             [(f"{side[:-3]} {q}", style, [s[side][q]["median"] for s in adm])
              for side, style in (("api_server_alone_ms", "o--"), ("with_webhook_ms", "o-")) for q in ("p50", "p99")])
    op = by_name.get("operator_convergence", {}).get("details", {}).get("sizes", [])
    if op:
        save("operator_rss.png", "Operator memory against cluster size", [s["nodes"] for s in op], "MiB",
             [("operator RSS (MiB)", "o-", [s["operator_rss_mib"]["after_convergence"] for s in op]),
              ("JSON of what it caches (MiB)", "o--", [s["cached_json_mib"] for s in op])])
    ro = by_name.get("rollout", {}).get("details", {}).get("sizes", [])
    ro = sorted((s for s in ro if s.get("samples")), key=lambda s: s["nodes"])
    if ro:
        save("rollout_time.png", "Rollout of a drain-needing policy change (hollow nodes)", [s["nodes"] for s in ro],
             "seconds until every node is configured and uncordoned",
             [("measured (median of rounds)", "o-", [sorted(x["seconds"] for x in s["samples"])[
                 len(s["samples"]) // 2] for s in ro]),
              ("ideal (waves x apply delay)", "o--", [s["ideal_seconds"] for s in ro])])
    return written


def write(out_dir: Path, summary: dict[str, Any], docs: list[dict[str, Any]]) -> None:
    pngs = plots(out_dir, docs)
    lines = [f"# Benchmark report{' (quick: smallest sizes, not figures to quote)' if summary['quick'] else ''}",
             "", table(summary), ""]
    if summary["missing"]:
        lines += [f"Figures not produced by this run: {', '.join(summary['missing'])}.", ""]
    if summary["failed_benchmarks"]:
        lines += [f"Benchmarks that failed: {summary['failed_benchmarks']}.", ""]
    lines += ["## Machine", "", "| benchmark | seconds | load average at start | at end |", "|---|---|---|---|"]
    for name, m in summary["machine"].items():
        start = (m.get("start") or {}).get("load_average")
        end = (m.get("end") or {}).get("load_average")
        lines.append(f"| {name} | {_fmt(m.get('seconds'))} | {start} | {end} |")
    lines += ["", "## Notes per figure", ""]
    for name, f in summary["figures"].items():
        lines.append(f"- `{name}`: {f.get('baseline_what') or 'no baseline'}; target {f.get('target_what') or '-'}"
                     f"{'; ' + f['note'] if f.get('note') else ''}")
    if pngs:
        lines += ["", "## Plots", ""] + [f"![{p}]({p})" for p in pngs]
    else:
        lines += ["", "(No plots: matplotlib is not installed; `pip install -e '.[bench]'`.)"]
    (out_dir / "report.md").write_text("\n".join(lines) + "\n")
