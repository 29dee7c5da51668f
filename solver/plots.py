"""Charts of frontiers, sweeps and risks (matplotlib, Agg backend: no display needed); PNG, SVG or PDF by extension."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError

LABELS = {"cost_usd": "cost (USD)", "wall_hours": "wall time (hours)", "quality": "quality (task score)",
          "forgetting_points": "forgetting (points of the general score)", "budget_usd": "budget (USD)",
          "deadline_hours": "deadline (hours)", "max_forgetting_points": "forgetting tolerance (points)",
          "min_quality": "minimum quality (task score)"}
METHOD_COLORS = {"sft": "tab:blue", "rl": "tab:red", "opd": "tab:green"}
# More points than this and only points whose plan label changes are annotated.
MAX_LABELS = 40


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plan_label(plan) -> str:
    return f"{plan.method.upper()} {plan.gpu_count}×{plan.gpu}"


PLOT_SUFFIXES = (".png", ".svg", ".pdf")  # matplotlib writes each by the file name's extension


def check_plot_path(path: Path) -> Path:
    """The --plot path, if it names a .png, .svg or .pdf file in an existing folder; else an InputError."""
    path = Path(path)
    if path.suffix.lower() not in PLOT_SUFFIXES:
        raise InputError(f"--plot: expected a .png, .svg or .pdf file name, got {path}")
    if path.is_dir():
        raise InputError(f"--plot: {path} is a directory, expected a file")
    if path.parent and not path.parent.exists():
        raise InputError(f"--plot: folder {path.parent} does not exist")
    return path


def plot_frontier(front, path: Path, title: str = "") -> Path:
    """The frontier as a staircase of points, each labelled with its plan (method, GPUs)."""
    path = check_plot_path(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [getattr(p.metrics, front.x) for p in front.points]
    ys = [getattr(p.metrics, front.y) for p in front.points]
    if front.points:
        order = sorted(range(len(xs)), key=lambda i: xs[i])
        ax.step([xs[i] for i in order], [ys[i] for i in order], where="post", color="0.7", lw=1, zorder=1)
        for method, color in METHOD_COLORS.items():
            idx = [i for i, p in enumerate(front.points) if p.plan.method == method]
            if idx:
                ax.scatter([xs[i] for i in idx], [ys[i] for i in idx], color=color, s=28, zorder=2, label=method.upper())
        previous = None
        for i in order:
            label = plan_label(front.points[i].plan)
            if len(front.points) <= MAX_LABELS or label != previous:
                ax.annotate(label, (xs[i], ys[i]), textcoords="offset points", xytext=(4, 4), fontsize=7)
            previous = label
        ax.legend(title="method", loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no feasible plan", ha="center", va="center", transform=ax.transAxes)
    for values, set_scale in ((xs, ax.set_xscale), (ys, ax.set_yscale)):
        if values and min(values) > 0 and max(values) / min(values) > 100:
            set_scale("log")  # points spread over decades (e.g. $500 OPD runs vs $200k SFT with labels)
    ax.set_xlabel(LABELS[front.x])
    ax.set_ylabel(LABELS[front.y])
    ax.set_title(title or f"exact Pareto frontier: {front.x} vs {front.y} ({len(front.points)} points)")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def plot_sweep(rows, path: Path, title: str = "") -> Path:
    """The four metrics of the optimal plan against the swept limit; infeasible values leave gaps."""
    path = check_plot_path(path)
    plt = _pyplot()
    limit = rows[0].limit if rows else "budget_usd"
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=110, sharex=True)
    ordered = sorted(rows, key=lambda r: r.value)
    for ax, metric in zip(axes.flat, ("cost_usd", "wall_hours", "quality", "forgetting_points")):
        xs = [r.value for r in ordered]
        ys = [getattr(r.result.metrics, metric) if r.result.metrics else float("nan") for r in ordered]
        ax.plot(xs, ys, color="0.6", lw=1, zorder=1)
        for method, color in METHOD_COLORS.items():
            idx = [i for i, r in enumerate(ordered) if r.result.plan and r.result.plan.method == method]
            if idx:
                ax.scatter([xs[i] for i in idx], [ys[i] for i in idx], color=color, s=12, zorder=2, label=method.upper())
        infeasible = [r.value for r in ordered if r.result.status == "infeasible"]
        if infeasible:
            ax.scatter(infeasible, [0] * len(infeasible), marker="x", color="0.4", s=12, label="infeasible",
                       transform=ax.get_xaxis_transform(), clip_on=False)
        ax.set_ylabel(LABELS[metric], fontsize=8)
        ax.grid(True, alpha=0.3)
    # label where the chosen plan changes, on the objective-free cost panel
    previous = None
    for r in ordered:
        if r.result.plan is not None:
            label = plan_label(r.result.plan)
            if label != previous:
                axes[0, 0].annotate(label, (r.value, r.result.metrics.cost_usd), textcoords="offset points",
                                    xytext=(3, 5), fontsize=6)
            previous = label
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        axes[0, 0].legend(handles, labels, fontsize=7, loc="best")
    for ax in axes[1]:
        ax.set_xlabel(LABELS[limit])
    fig.suptitle(title or f"sweep of {limit} ({len(rows)} values)")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
