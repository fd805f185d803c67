"""Printed lines, target checks and Markdown tables of ``benchmarks/bench_core.py``."""

from __future__ import annotations

TARGET_MEMORY_COPIES = 2.0


# ------------------------------------------------------------- printing
def verdict(ok):
    return "PASS" if ok else "FAIL"


def format_metric_row(r):
    line = (
        f"{r['case']:<22} {r['metric']:<15} {r['scheme']:<9} "
        f"{1e3 * r['time_s']:>10.2f} ms {1e3 * r['ref_time_s']:>10.2f} ms {r['ratio']:>6.2f}x"
        f" (p10 {r['ratio_p10']:.2f}x)"
    )
    if r["target_ratio"] is not None:
        line += f"  [<= {r['target_ratio']:.1f}x {verdict(r['ratio'] <= r['target_ratio'])}]"
    if "peak_copies" in r:
        line += (
            f"  mem {r['peak_copies']:.2f} copies (ref {r['ref_peak_copies']:.2f})"
            f" [<= {TARGET_MEMORY_COPIES:.0f} {verdict(r['peak_copies'] <= TARGET_MEMORY_COPIES)}]"
        )
    return line


def format_rebin_row(r):
    return (
        f"{r['case']:<22} rebin {r['notion']:<16} {r['scheme']:<9} {r['via']:<22} "
        f"{1e6 * r['rebin_time_s']:>9.1f} us = {r['percent']:6.3f}% "
        f"of {1e3 * r['one_off_time_s']:.2f} ms"
        f"  [< {r['target_percent']:.0f}% {verdict(r['percent'] < r['target_percent'])}]"
        f"  (precompute {1e3 * r['precompute_time_s']:.1f} ms)"
    )


def summary(metric_rows_, rebin_rows_):
    checks = []
    for r in metric_rows_:
        if r["target_ratio"] is not None:
            checks.append(
                (f"{r['case']} {r['metric']} time", r["ratio"] <= r["target_ratio"], r["ratio"])
            )
        if "peak_copies" in r:
            checks.append(
                (
                    f"{r['case']} {r['metric']} {r['scheme']} memory",
                    r["peak_copies"] <= TARGET_MEMORY_COPIES,
                    r["peak_copies"],
                )
            )
    for r in rebin_rows_:
        checks.append(
            (
                f"{r['case']} rebin {r['notion']} {r['scheme']} {r['via']}",
                r["percent"] < r["target_percent"],
                r["percent"],
            )
        )
    return checks


def markdown_tables(data) -> str:
    """Markdown tables of a JSON result (``--markdown-from``), for BENCHMARKS.md."""
    lines = [
        "| case | metric | scheme | median | reference | ratio | ratio (p10) | peak memory |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in data["metrics"]:
        ratio = f"{r['ratio']:.2f}x"
        if r["target_ratio"] is not None:
            ratio += " PASS" if r["ratio"] <= r["target_ratio"] else " FAIL"
        mem = ""
        if "peak_copies" in r:
            mem = f"{r['peak_copies']:.3f} (ref {r['ref_peak_copies']:.2f})"
        lines.append(
            f"| {r['case']} | {r['metric']} | {r['scheme']} | {1e3 * r['time_s']:.2f} ms | "
            f"{1e3 * r['ref_time_s']:.2f} ms | {ratio} | {r['ratio_p10']:.2f}x | {mem} |"
        )
    lines += [
        "",
        "| case | notion | scheme | via | re-binning | one-off pass | % | precompute |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for r in data["rebinning"]:
        verdict_ = "PASS" if r["percent"] < r["target_percent"] else "FAIL"
        lines.append(
            f"| {r['case']} | {r['notion']} | {r['scheme']} | {r['via']} | "
            f"{1e6 * r['rebin_time_s']:.1f} us | {1e3 * r['one_off_time_s']:.2f} ms | "
            f"{r['percent']:.3f} % {verdict_} | {1e3 * r['precompute_time_s']:.0f} ms |"
        )
    return "\n".join(lines)
