"""How ``planopt track`` shows a run against its plan: the verdict line, the table, and the picture of each
measured series over the plan's predicted band (``plots.py``'s conventions: Agg, written through
``save_figure``)."""

from __future__ import annotations

from pathlib import Path

from planopt.report.text import hours, table, usd

UNIT_TEXT = {"USD": usd, "hours": hours, "s": lambda x: f"{x:,.1f} s", "points": lambda x: f"{x:.2f}"}


def _fmt(unit: str, x) -> str:
    return "-" if x is None else UNIT_TEXT[unit](x)


def track_report(result) -> str:
    """The verdict line, then the checks (measured against the plan's P10-P50-P90), the money lines and the
    shares of scenarios meeting each limit before the run and updated by it."""
    s = result.state
    rows = [(c.name, _fmt(c.unit, c.measured), _fmt(c.unit, c.predicted["p10"]), _fmt(c.unit, c.predicted["p50"]),
             _fmt(c.unit, c.predicted["p90"]), c.position) for c in result.checks]
    lines = [result.headline, "",
             f"Run {s.source} ({s.kind}): step {s.last_step:,} of {s.plan_steps:,} ({s.share_done:.0%}), "
             f"{hours(s.elapsed_hours)}" + ("" if s.elapsed_measured else " (estimated: steps × mean step time)")
             + f", {s.gpu_count} × {s.gpu}"
             + (f", stage {s.stage + 1} of {s.stages} ({s.method}, from step {s.stage_start:,})" if s.stages > 1 else ""),
             "", f"At step {s.last_step:,} (the plan's band before the run)",
             table(rows, header=("measured", "value", "P10", "P50", "P90", "where"))]
    if not s.spend_measured:
        lines.append("  spend: not logged; GPUs × the plan's price × elapsed hours")
    if result.lines:
        money = [(f"{ln.name} line", usd(ln.usd), "-" if ln.crossing_hours is None else
                  f"day {ln.crossing_hours / 24:,.1f} ({hours(ln.crossing_hours)})",
                  "yes" if ln.crossing_hours is not None and ln.crossing_hours <= result.projected_end_hours else "no")
                 for ln in result.lines]
        lines += ["", f"Money at the measured burn rate ({usd(result.burn_usd_per_hour)}/h; committed "
                      f"{usd(result.committed_usd)}; the run ends about {hours(result.projected_end_hours)} from its start)",
                  table(money, header=("line", "USD", "crossed at", "before the run ends"))]
    shares = [(name, f"{float(result.before.meets_limit[name].mean()):.1%}", f"{float(v.mean()):.1%}")
              for name, v in result.after.meets_limit.items()]
    shares.append(("every limit", f"{result.before.share():.1%}", f"{result.after.share():.1%}"))
    lines += ["", f"Scenarios meeting each limit ({result.after.scenarios:,}; updated by the run with fit's Bayes update; "
                  f"target {result.target_share:.0%})",
              table(shares, header=("limit", "before the run", "updated"))]
    return "\n".join(lines)


def plot_track(result, path: Path, title: str) -> None:
    """Each measured series (step time, task score, forgetting) over the plan's P10-P90 band and P50 line: the
    series of ``result.series()``, which ``track --json`` carries and the page draws."""
    from planopt.report.plots import pyplot, save_figure
    from planopt.runs.stages import stage_ends
    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, panel in zip(axes, result.series()):
        b = panel["predicted"]
        ax.fill_between(b["step"], b["p10"], b["p90"], color="#4c72b0", alpha=0.25, label="plan P10–P90")
        ax.plot(b["step"], b["p50"], color="#4c72b0", linewidth=1, label="plan P50")
        if panel["measured"] is not None:
            ax.plot(panel["measured"]["step"], panel["measured"]["value"], ".", color="#c44e52", markersize=3, label="measured")
        ax.axvline(result.state.last_step, color="grey", linewidth=0.8, linestyle=":")
        for end in stage_ends(result.plan)[:-1]:  # where a staged plan's next stage starts
            ax.axvline(end, color="grey", linewidth=0.8, linestyle="--")
        ax.set_xlabel("step")
        ax.set_ylabel(panel["label"])
    axes[0].legend(fontsize=8)
    fig.suptitle(f"{title}: {result.headline}")
    save_figure(fig, path)
