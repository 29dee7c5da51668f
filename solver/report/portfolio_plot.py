"""Gantt chart of a solved portfolio: jobs over buckets, with reserved capacity (matplotlib Agg)."""

from __future__ import annotations

from pathlib import Path

from planopt.report.labels import figure_text
from planopt.report.plots import pyplot, save_figure

TIER_COLOURS = {"reserved": "#2b6cb0", "on_demand": "#dd6b20", "spot": "#38a169"}


def plot_schedule(result, path: str | Path) -> Path:
    """Top: one row per job, its window (grey) and the GPU-hours it runs in each bucket by tier
    (bar height = share of the bucket the job's GPUs are busy, at least a visible sliver). Bottom: reserved GPU-hours used per bucket
    and type against the committed capacity."""
    from matplotlib.patches import Patch
    plt = pyplot()
    path = Path(path)
    jobs = result.jobs
    B, H = result.buckets, result.bucket_hours
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(max(8, 0.35 * B + 4), 2.5 + 0.32 * len(jobs) + 2.5),
                                  gridspec_kw={"height_ratios": [max(2, 0.32 * len(jobs)), 2.5]}, sharex=True)
    for y, js in enumerate(jobs):
        ax.barh(y, js.deadline_bucket - js.release_bucket + 1, left=js.release_bucket, height=0.8, color="#edf2f7",
                edgecolor="#a0aec0", linewidth=0.5)
        cap = max(g.count for g in js.gangs) * H if js.gangs else H
        for b in range(B):
            left = 0.0
            for tier in ("reserved", "on_demand", "spot"):
                v = js.gpu_hours.get((b, tier), 0.0)
                if v > 0:
                    share = min(1.0, max(0.08, v / cap))  # a sliver of work stays visible
                    ax.barh(y - 0.4 + left * 0.8, 0.9, left=b + 0.05, height=0.8 * share, align="edge", color=TIER_COLOURS[tier])
                    left += share
    ax.set_yticks(range(len(jobs)))
    # tick labels are redrawn from these strings at every draw, so they are made literal here
    ax.set_yticklabels([figure_text(f"{j.name} ({', '.join(f'{g.count}×{g.pool}' for g in j.gangs)})") for j in jobs], fontsize=7)
    ax.invert_yaxis()
    ax.set_title(f"{result.name}: {result.status}, cost ${result.cost_usd:,.0f}" if result.cost_usd is not None else result.name)
    ax.legend(handles=[Patch(color=c, label=t.replace("_", "-")) for t, c in TIER_COLOURS.items()]
              + [Patch(facecolor="#edf2f7", edgecolor="#a0aec0", label="window")], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=7)
    types = [g for g, n in result.reserved.items() if n]
    width = 0.8 / max(1, len(types))
    for n, g in enumerate(types):
        used = [sum(gang.gpu_hours.get((b, "reserved"), 0.0) for js in jobs for gang in js.gangs if gang.pool == g) / H
                for b in range(B)]
        ax2.bar([b + 0.1 + n * width for b in range(B)], used, width=width, align="edge", label=f"{g} used")
        ax2.hlines(result.reserved[g], 0, B, linestyles="dashed", colors=f"C{n}", label=f"{g} reserved: {result.reserved[g]}")
    ax2.set_ylabel("reserved GPUs busy (avg)")
    ax2.set_xlabel(f"bucket ({H:g} h each)")
    if types:
        ax2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    else:
        ax2.text(0.5, 0.5, "no reserved GPUs", transform=ax2.transAxes, ha="center")
    ax2.set_xlim(0, B)
    return save_figure(fig, path, dpi=120)
