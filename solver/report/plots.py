"""Charts of frontiers and sweeps (matplotlib, Agg backend: no display needed); PNG, SVG or PDF by extension.

Every figure of planopt is drawn through :func:`pyplot` and written by
:func:`save_figure`: every text is made literal first (``labels.figure_text``:
no lone surrogates, no ``$`` starting mathtext, so a name such as ``cost $x^$``
is drawn as typed), then the figure is written to a temporary file and renamed,
so a failed draw leaves no half-written file.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

from planopt.errors import InputError
from planopt.report.labels import LABELS, change_labels, drop_overlapping, figure_text, human, printable

__all__ = ["LABELS", "METHOD_COLORS", "PLOT_SUFFIXES", "check_plot_path", "plan_label", "plot_chance_frontier",
           "plot_frontier", "plot_grid", "plot_sweep", "pyplot", "save_figure"]

METHOD_COLORS = {"sft": "tab:blue", "rl": "tab:red", "opd": "tab:green"}
PLOT_SUFFIXES = (".png", ".svg", ".pdf")  # matplotlib writes each by the file name's extension
# Where "no plan" crosses sit in a sweep panel: this share of the panel's data range below its lowest value.
NO_PLAN_MARGIN = 0.12


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt



def plan_label(plan) -> str:
    """A plot's label of a plan: its method and GPUs (``RL 8×H100``)."""
    return printable(f"{plan.method.upper()} {plan.gpu_count}×{plan.gpu}")


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


def make_printable(fig) -> None:
    """Make every text of ``fig`` literal (``labels.figure_text``): the renderer refuses lone surrogates, and
    mathtext refuses names such as ``cost $x^$``. Tick labels are rewritten by the formatter at each draw, so
    log-scale ticks keep their mathtext."""
    from matplotlib.text import Text
    for text in fig.findobj(Text):
        raw = text.get_text()
        if raw != figure_text(raw):
            text.set_text(figure_text(raw))


def save_figure(fig, path: Path, dpi: float | None = None, layout: bool = True) -> Path:
    """Write ``fig`` to ``path`` (format by extension) and close it: texts made printable, then a tight
    layout (drawing the texts, so only after they are printable), then a temporary file renamed into place."""
    path = Path(path)
    make_printable(fig)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")  # same folder: the rename is atomic
    try:
        with warnings.catch_warnings():
            # a name in a script the font lacks is drawn as boxes; that is no reason to print a warning
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            if layout:
                fig.tight_layout()
            fig.savefig(tmp, format=path.suffix.lower().lstrip("."), dpi=dpi or "figure")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        pyplot().close(fig)
    return path


def _drop_overlapping_labels(fig, texts, ax) -> None:
    """Lay the figure out as it will be saved, then drop the point labels that collide or leave ``ax``."""
    make_printable(fig)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        fig.tight_layout()
        fig.canvas.draw()
    drop_overlapping(texts, fig.canvas.get_renderer(), inside=ax.get_window_extent())


def _annotate(ax, label: str, x: float, y: float, right_half: bool, size: float = 7):
    """A point's label, up and to the right of it (to the left in the right half of a curve, so it stays in
    the axes). Left out of the layout: a long label must not shrink the axes; one that does not fit is dropped."""
    text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(-4, 4) if right_half else (4, 4),
                       ha="right" if right_half else "left", fontsize=size)
    text.set_in_layout(False)
    return text


def plot_frontier(front, path: Path, title: str = "", name: str = "") -> Path:
    """The frontier as a staircase of points coloured by method. Each point is labelled with the parts of
    its plan that change along the frontier; the parts every point shares are said once, under the title."""
    path = check_plot_path(path)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [getattr(p.metrics, front.x) for p in front.points]
    ys = [getattr(p.metrics, front.y) for p in front.points]
    common = ""
    if front.points:
        order = sorted(range(len(xs)), key=lambda i: (xs[i], ys[i]))
        ax.step([xs[i] for i in order], [ys[i] for i in order], where="post", color="0.7", lw=1, zorder=1)
        for method, color in METHOD_COLORS.items():
            idx = [i for i, p in enumerate(front.points) if p.plan.method == method]
            if idx:
                ax.scatter([xs[i] for i in idx], [ys[i] for i in idx], color=color, s=28, zorder=2, label=method.upper())
        labels, common = change_labels([front.points[i].plan for i in order])
        texts = [_annotate(ax, label, xs[i], ys[i], right_half=rank >= len(order) / 2)
                 for rank, (i, label) in enumerate(zip(order, labels)) if label]
        ax.legend(title="method", loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no feasible plan", ha="center", va="center", transform=ax.transAxes)
    for values, set_scale in ((xs, ax.set_xscale), (ys, ax.set_yscale)):
        if values and min(values) > 0 and max(values) / min(values) > 100:
            set_scale("log")  # points spread over decades (e.g. $500 OPD runs vs $200k SFT with labels)
    ax.set_xlabel(LABELS[front.x])
    ax.set_ylabel(LABELS[front.y])
    heading = title or (f"{name + ': ' if name else ''}exact Pareto frontier of {human(front.x)} and "
                        f"{human(front.y)} ({len(front.points)} point{'s' if len(front.points) != 1 else ''})")
    ax.set_title(heading + (f"\nevery point: {common}" if common else ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    if front.points:
        _drop_overlapping_labels(fig, texts, ax)
    return save_figure(fig, path, layout=not front.points)  # laid out above when there were labels


def plot_chance_frontier(front, path: Path, title: str = "", name: str = "") -> Path:
    """Expected metric against the probability of meeting every limit: in sample (the staircase the MIP
    walks, filled markers) and out of sample (hollow markers). Like :func:`plot_frontier`, each point is
    labelled with what its plan changes from the point before (the first with every part that varies),
    the parts every point shares are said once under the title, and labels that collide are dropped."""
    path = check_plot_path(path)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    pts = sorted(front.points, key=lambda p: (p.in_sample_share, p.expected[front.metric]))
    common, texts = "", []
    if pts:
        xs, ys = [p.in_sample_share for p in pts], [p.expected[front.metric] for p in pts]
        ax.step(xs, ys, where="pre", color="0.6", lw=1, zorder=1)
        ax.scatter(xs, ys, s=28, color="tab:blue", zorder=2, label=f"in sample ({front.scenarios:,} scenarios)")
        ax.scatter([p.out_of_sample_share for p in pts], ys, s=28, facecolors="none", edgecolors="tab:orange",
                   zorder=2, label=f"out of sample ({front.out_of_sample:,} fresh scenarios)")
        labels, common = change_labels([p.plan for p in pts])
        texts = [_annotate(ax, label, x, y, right_half=rank >= len(pts) / 2)
                 for rank, (label, x, y) in enumerate(zip(labels, xs, ys)) if label]
        ax.legend(loc="best", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no plan meets the limits in any scenario", ha="center", va="center", transform=ax.transAxes)
    from matplotlib.ticker import PercentFormatter
    ax.xaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("probability of meeting every limit (% of scenarios)")
    ax.set_ylabel(f"expected {LABELS[front.metric]}")
    heading = title or (f"{name + ': ' if name else ''}expected {human(front.metric)} against the probability of "
                        f"meeting every limit ({len(pts)} point{'s' if len(pts) != 1 else ''})")
    ax.set_title(heading + (f"\nevery point: {common}" if common else ""), fontsize=10)
    ax.grid(True, alpha=0.3)
    if texts:
        _drop_overlapping_labels(fig, texts, ax)
    return save_figure(fig, path, layout=not texts)  # laid out above when there were labels


def _no_plan_y(ys: list[float]) -> tuple[float, tuple[float, float]]:
    """Where a panel draws its "no plan" crosses (data coordinates), and the y-limits that keep them inside."""
    finite = [y for y in ys if y is not None and math.isfinite(y)]
    if not finite:
        return 0.5, (0.0, 1.0)
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or max(abs(hi), 1.0) * 0.1
    mark = lo - NO_PLAN_MARGIN * span
    return mark, (mark - NO_PLAN_MARGIN * span, hi + NO_PLAN_MARGIN * span)


def plot_sweep(rows, path: Path, title: str = "", name: str = "") -> Path:
    """The four metrics of the optimal plan against the swept limit. A value with no plan (infeasible, or
    stopped without one) leaves a gap in the lines and a cross at the foot of each panel, in the panel's
    own data coordinates, so it can never fall outside its axes."""
    path = check_plot_path(path)
    plt = pyplot()
    limit = rows[0].limit if rows else "budget_usd"
    fig, axes = plt.subplots(2, 2, figsize=(10, 7), dpi=110, sharex=True)
    ordered = sorted(rows, key=lambda r: r.value)
    xs = [r.value for r in ordered]
    for ax, metric in zip(axes.flat, ("cost_usd", "wall_hours", "quality", "forgetting_points")):
        ys = [getattr(r.result.metrics, metric) if r.result.plan is not None and r.result.metrics else float("nan")
              for r in ordered]
        ax.plot(xs, ys, color="0.6", lw=1, zorder=1)
        for method, color in METHOD_COLORS.items():
            idx = [i for i, r in enumerate(ordered) if r.result.plan and r.result.plan.method == method]
            if idx:
                ax.scatter([xs[i] for i in idx], [ys[i] for i in idx], color=color, s=12, zorder=2, label=method.upper())
        mark, ylim = _no_plan_y(ys)
        for status, label, marker in (("infeasible", "infeasible", "x"), (None, "stopped without a plan", "+")):
            at = [r.value for r in ordered if r.result.plan is None
                  and (r.result.status == "infeasible") == (status == "infeasible")]
            if at:
                ax.scatter(at, [mark] * len(at), marker=marker, color="0.35", s=24, zorder=3, label=label, clip_on=True)
        if any(r.result.plan is None for r in ordered):
            ax.set_ylim(*ylim)
            # shade the strip the crosses sit in: their height is a place, not a value
            ax.axhspan(ylim[0], (mark + min((y for y in ys if math.isfinite(y)), default=1.0)) / 2,
                       color="0.93", zorder=0)
        ax.set_ylabel(LABELS[metric], fontsize=8)
        ax.grid(True, alpha=0.3)
    # label where the chosen plan changes, on the cost panel, with what changes
    solved = [r for r in ordered if r.result.plan is not None]
    labels, common = change_labels([r.result.plan for r in solved])
    texts = [_annotate(axes[0, 0], label, r.value, r.result.metrics.cost_usd, right_half=n >= len(solved) / 2, size=6)
             for n, (r, label) in enumerate(zip(solved, labels)) if label]
    handles, legend_labels = axes[0, 0].get_legend_handles_labels()
    if handles:
        axes[0, 0].legend(handles, legend_labels, fontsize=7, loc="best")
    for ax in axes[1]:
        ax.set_xlabel(LABELS[limit])
    objective = ordered[0].result.objective if ordered else None
    heading = title or (f"{name + ': ' if name else ''}sweep of the {human(limit)} ({len(rows)} values"
                        + (f", objective: {objective}" if objective else "") + ")")
    fig.suptitle(heading + (f"\nevery plan: {common}" if common else ""), fontsize=10)
    _drop_overlapping_labels(fig, texts, axes[0, 0])
    return save_figure(fig, path, layout=False)


def plot_grid(points, path: Path, title: str = "") -> Path:
    """Expected cost against confidence, one line per value of the swept limit; with one confidence
    and a swept limit, expected cost against the limit (``points``: ``studies/sweep.GridPoint``, of
    ``planopt sweep --confidence``). Infeasible points: crosses at the foot of the axes."""
    path = check_plot_path(path)
    plt = pyplot()
    limit = points[0].limit if points else None
    by_limit = len({p.confidence for p in points}) == 1 and limit is not None
    x_of = (lambda p: p.value) if by_limit else (lambda p: p.confidence)
    groups: dict = {}  # a line per confidence (or per value of the swept limit)
    for p in points:
        groups.setdefault(p.confidence if by_limit else p.value, []).append(p)
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    for n, (key, group) in enumerate(groups.items()):
        group = sorted(group, key=x_of)
        solved = [p for p in group if p.expected("cost_usd") is not None]
        name = f"confidence {key:g}" if by_limit else (f"{LABELS[limit]} {key:,.6g}" if limit else "instance limits")
        # later lines get smaller markers, so that equal points of several lines stay visible
        line, = ax.plot([x_of(p) for p in solved], [p.expected("cost_usd") for p in solved], marker="o",
                        ms=max(3.0, 9.0 - 1.5 * n), lw=1.2, label=name, zorder=2 + n)
        failed = [x_of(p) for p in group if p.expected("cost_usd") is None]
        if failed:  # inside the axes, one row per line at its foot
            ax.scatter(failed, [0.03 + 0.03 * n] * len(failed), marker="x", s=30, color=line.get_color(),
                       transform=ax.get_xaxis_transform(), clip_on=True, zorder=3)
    xs = [x_of(p) for p in points]
    if xs:  # the crosses' blended transform does not widen the x range by itself
        pad = 0.05 * (max(xs) - min(xs)) or 0.05 * max(1.0, abs(xs[0]))
        ax.set_xlim(min(xs) - pad, max(xs) + pad)
    if any(p.expected("cost_usd") is None for p in points):
        ax.scatter([], [], marker="x", color="0.3", label="no plan (infeasible or stopped)")
    ax.set_xlabel(LABELS[limit] if by_limit else "confidence (share of scenarios meeting every limit)")
    ax.set_ylabel("expected cost (USD)")
    ax.set_title(title or "the cost of certainty")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return save_figure(fig, path)  # printable text, tight layout, atomic write
