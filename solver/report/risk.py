"""How a plan's risk is shown: a text section and a picture of the distributions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planopt.uncertainty.risk import Risk
from planopt.report.text import table

LABELS = {"cost_usd": ("cost", "USD"), "wall_hours": ("wall time", "h"), "quality": ("quality", "pts"),
          "forgetting_points": ("forgetting", "pts")}
LIMIT_OF_METRIC = {"cost_usd": ("budget_usd", "≤"), "wall_hours": ("deadline_hours", "≤"),
                   "quality": ("min_quality", "≥"), "forgetting_points": ("max_forgetting_points", "≤")}


def _fmt(metric: str, x: float) -> str:
    if metric == "cost_usd":
        return f"${x:,.0f}"
    if metric == "wall_hours":
        return f"{x:,.1f} h"
    return f"{x:.2f} pts"


def risk_section(risk: dict[str, Any]) -> str:
    """Text for the ``risk`` object of a result (plan risk or chance-constrained solve)."""
    lines = []
    if "in_sample_share" in risk:
        lines.append(f"Risk: every limit met in {risk['in_sample_share']:.1%} of {risk['scenarios']} sampled scenarios "
                     f"(asked: {risk['confidence']:.1%}); measured on {risk['out_of_sample_scenarios']:,} fresh scenarios: "
                     f"{risk['out_of_sample_share']:.1%} ({risk['difference']:+.1%})")
        if risk.get("guard_rounds"):
            lines.append(f"The {risk['confidence']:.1%} asked did not hold out of sample, so the sample share was raised to "
                         f"{risk['in_sample_target']:.1%} ({risk['guard_rounds']} re-solve(s))")
        if risk.get("guard"):
            lines.append(f"Warning: {risk['guard']}")
        measure = risk["objective_measure"]
        if measure == "expected":
            what = ", ".join(f"{LABELS[k][0]} {_fmt(k, v)}" for k, v in risk["expected"].items())
            lines.append(f"Means over the {risk['scenarios']} scenarios (the objective is the mean): {what}")
        else:
            lines.append(f"Objective: CVaR at {measure.removeprefix('cvar_')} of cost over the {risk['scenarios']} scenarios: "
                         f"{_fmt('cost_usd', risk['cvar_cost_usd'])}")
        lines.append(f"Percentiles over the {risk['out_of_sample_scenarios']:,} fresh scenarios:")
        shares = risk.get("out_of_sample_limits", {})
        percentiles = risk["percentiles"]
    elif "share_meeting_all_limits" in risk:
        lines.append(f"Risk over {risk['scenarios']:,} scenarios of the uncertainty model: every limit met in "
                     f"{risk['share_meeting_all_limits']:.1%}")
        shares = risk["limits"]
        percentiles = risk["percentiles"]
    else:  # an infeasible chance-constrained solve
        return ""
    rows = []
    for metric, (label, _) in LABELS.items():
        p = percentiles[metric]
        limit_name, sense = LIMIT_OF_METRIC[metric]
        share = shares.get(limit_name)
        rows.append((label, _fmt(metric, p["p10"]), _fmt(metric, p["p50"]), _fmt(metric, p["p90"]),
                     "-" if share is None else f"{share:.1%}"))
    lines.append(table(rows, header=("metric", "P10", "P50", "P90", "meets its limit")))
    return "\n".join(lines)


def plot_risk(risk: Risk, path: Path, title: str) -> None:
    """Histograms of cost, wall time, quality and forgetting, with the limits drawn on them."""
    from planopt.report.plots import pyplot, save_figure
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for ax, (metric, (label, unit)) in zip(axes.flat, LABELS.items()):
        values = risk.samples.metric(metric)
        ax.hist(values, bins=50, color="#4c72b0", alpha=0.85)
        limit_name, sense = LIMIT_OF_METRIC[metric]
        if limit_name in risk.limits:
            limit = risk.limits[limit_name]
            share = float(risk.meets_limit[limit_name].mean())
            ax.axvline(limit, color="#c44e52", linewidth=2)
            ax.text(0.98, 0.95, f"limit {sense} {_fmt(metric, limit)}\nmet in {share:.0%}", transform=ax.transAxes,
                    ha="right", va="top", color="#c44e52", fontsize=9)
        ax.set_xlabel(f"{label} ({unit})")
        ax.set_ylabel("scenarios")
    fig.suptitle(f"{title}: {risk.scenarios:,} scenarios, every limit met in {risk.share():.1%}")  # mathtext is off
    save_figure(fig, path)
