"""Issue 13 items 2, 7 and 24: what the figures show, read back from the matplotlib objects.

- sweep plots draw "no plan" crosses in each panel's own data coordinates, inside its axes;
- frontier plots label axes with units, title with human names, and each point with what changes
  along the frontier (what every point shares is said once), with no two labels overlapping; so do
  probability-frontier plots (expected cost against the probability of meeting every limit);
- names with ``$``, ``^``, mathtext or a lone surrogate never crash a figure or the text report.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

import planopt.report.plots as plots
from planopt.instance import load_instance
from planopt.report.labels import change_labels, figure_text, printable
from planopt.models.schema.plan import HardwareChoice, Plan, Recipe
from planopt.job.model import PlanModel
from planopt.studies.sweep import run_sweep
from tests.support.common import INSTANCES

WEIRD_NAMES = ["cost $x^$", "$\\frac{1}{0}$ ^_^ $$", "lone \ud800 surrogate", "tab\there \\$ and ünïcödé 名前"]


@pytest.fixture
def figures(monkeypatch):
    """The figures the plotters save, kept for inspection (``save_figure`` still writes and closes them)."""
    saved = []
    original = plots.save_figure

    def keep(fig, path, *args, **kwargs):
        saved.append(fig)
        return original(fig, path, *args, **kwargs)

    monkeypatch.setattr(plots, "save_figure", keep)
    return saved


def _opd(steps: int, schedule=(8, 4, 4), gpu="H100-SXM", count=8, method="opd") -> Plan:
    return Plan.of(Recipe(method, steps, schedule if method != "sft" else (), "fp8" if method == "opd" else None,
                          1.0 if method == "sft" else None), HardwareChoice(gpu, count), 240.0)


def _frontier(plans, costs, qualities):
    points = [SimpleNamespace(plan=p, metrics=SimpleNamespace(cost_usd=c, quality=q))
              for p, c, q in zip(plans, costs, qualities)]
    return SimpleNamespace(x="cost_usd", y="quality", points=points)


def _annotations(ax):
    from matplotlib.text import Annotation
    return [t for t in ax.texts if isinstance(t, Annotation)]


# --- item 2: sweep plots -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_sweep_rows():
    """tiny.json's budget sweep: the five budgets below its optimum ($737) are infeasible."""
    inst = load_instance(INSTANCES / "tiny.json")
    rows = run_sweep(PlanModel(inst), "budget_usd", [300, 400, 500, 600, 700, 800, 1000, 1500])
    assert sum(r.result.status == "infeasible" for r in rows) == 5
    return rows


@pytest.mark.parametrize("suffix", [".png", ".svg", ".pdf"])
def test_sweep_infeasible_markers_sit_inside_their_own_axes(tmp_path, figures, tiny_sweep_rows, suffix):
    out = plots.plot_sweep(tiny_sweep_rows, tmp_path / f"sweep{suffix}", name="tiny")
    assert out.exists() and out.stat().st_size > 0
    fig = figures[0]
    panels = [ax for ax in fig.axes if ax.get_ylabel()]
    assert len(panels) == 4
    for ax in panels:
        crosses = [c for c in ax.collections if c.get_label() == "infeasible"]
        assert len(crosses) == 1, ax.get_ylabel()
        coll = crosses[0]
        assert coll.get_offset_transform() == ax.transData  # data coordinates, not an axis transform
        assert coll.get_clip_on()
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        offsets = coll.get_offsets()
        assert len(offsets) == 5
        for x, y in offsets:
            assert x0 <= x <= x1 and y0 < y < y1, (ax.get_ylabel(), x, y, ax.get_ylim())
        # below every solved value, so a cross never sits on the curve
        solved = [r.result.metrics for r in tiny_sweep_rows if r.result.plan is not None]
        lowest = min(getattr(m, {"cost (USD)": "cost_usd"}.get(ax.get_ylabel(), "cost_usd")) for m in solved)
        if ax.get_ylabel() == "cost (USD)":
            assert max(offsets[:, 1]) < lowest


def test_sweep_titles_and_labels_are_human(tmp_path, figures, tiny_sweep_rows):
    plots.plot_sweep(tiny_sweep_rows, tmp_path / "sweep.png", name="tiny")
    fig = figures[0]
    title = fig._suptitle.get_text()
    assert "budget_usd" not in title and "budget" in title
    assert "every plan: OPD · 8×H100-SXM" in title  # all feasible rows share one plan: said once
    labels = {ax.get_xlabel() for ax in fig.axes if ax.get_xlabel()}
    assert labels == {"budget (USD)"}
    assert {ax.get_ylabel() for ax in fig.axes} >= {"cost (USD)", "wall time (h)"}


# --- item 7: frontier plots --------------------------------------------------------------------------------
def test_frontier_labels_say_what_changes(tmp_path, figures):
    plans = [_opd(100), _opd(200), _opd(400), _opd(400, (16, 8, 8))]
    plots.plot_frontier(_frontier(plans, [1000, 2000, 4000, 8000], [40, 45, 50, 52]), tmp_path / "f.png", name="job")
    ax = figures[0].axes[0]
    texts = [t.get_text() for t in _annotations(ax)]
    # the first point names every part that varies; later ones only what differs from the point before
    assert texts == ["100 steps · 8→4→4 samples", "200 steps", "400 steps", "16→8→8 samples"]
    title = ax.get_title()
    assert title.startswith("job: exact Pareto frontier of cost and quality (4 points)")
    assert "every point: OPD · 8×H100-SXM · fp8 teacher · full weights · ckpt 240 min" in title
    assert "cost_usd" not in title and "_" not in title
    assert ax.get_xlabel() == "cost (USD)" and ax.get_ylabel() == "quality (task score, pts)"



def _assert_labels_apart_and_inside(fig, of: int) -> None:
    """Some but not all of ``of`` point labels are kept, each inside the axes and none overlapping another."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    ax = fig.axes[0]
    canvas = FigureCanvasAgg(fig)  # closing the figure detached its canvas; draw it again as it was saved
    canvas.draw()
    renderer = canvas.get_renderer()
    kept = _annotations(ax)
    assert 0 < len(kept) < of
    boxes = [t.get_window_extent(renderer) for t in kept]
    frame = ax.get_window_extent(renderer)
    for n, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        assert not any(box.overlaps(other) for other in boxes[n + 1:])

def test_frontier_labels_never_overlap_and_stay_inside_the_axes(tmp_path, figures):
    # 60 points crowded on a short curve: the labels cannot all fit, and the ones kept must not collide
    plans = [_opd(100 * (n + 1), (8, 4, 4) if n % 2 else (16, 8, 8), count=8 if n % 3 else 16) for n in range(60)]
    costs = [1000 + 5 * n for n in range(60)]
    plots.plot_frontier(_frontier(plans, costs, [40 + 0.1 * n for n in range(60)]), tmp_path / "f.png")
    _assert_labels_apart_and_inside(figures[0], of=60)


def _chance_frontier(plans, shares, costs):
    points = [SimpleNamespace(plan=p, in_sample_share=s, out_of_sample_share=s - 0.01,
                              expected={"cost_usd": c, "quality": 40.0, "wall_hours": 5.0, "forgetting_points": 0.5})
              for p, s, c in zip(plans, shares, costs)]
    return SimpleNamespace(metric="cost_usd", points=points, scenarios=200, out_of_sample=10_000)


def test_probability_frontier_labels_say_what_changes(tmp_path, figures):
    plans = [_opd(100), _opd(200), _opd(400), _opd(400, (16, 8, 8))]
    plots.plot_chance_frontier(_chance_frontier(plans, [0.6, 0.7, 0.8, 0.9], [700, 800, 900, 1000]),
                               tmp_path / "p.png", name="job")
    ax = figures[0].axes[0]
    assert [t.get_text() for t in _annotations(ax)] == ["100 steps · 8→4→4 samples", "200 steps", "400 steps",
                                                         "16→8→8 samples"]
    title = ax.get_title()
    assert title.startswith("job: expected cost against the probability of meeting every limit (4 points)")
    assert "every point: OPD · 8×H100-SXM · fp8 teacher · full weights · ckpt 240 min" in title
    assert "cost_usd" not in title and "_" not in title
    assert ax.get_xlabel() == "probability of meeting every limit (% of scenarios)"
    assert ax.get_ylabel() == "expected cost (USD)"


def test_probability_frontier_labels_never_overlap_and_stay_inside_the_axes(tmp_path, figures):
    plans = [_opd(100 * (n + 1), (8, 4, 4) if n % 2 else (16, 8, 8)) for n in range(60)]
    plots.plot_chance_frontier(_chance_frontier(plans, [0.3 + 0.01 * n for n in range(60)],
                                                [700 + 2 * n for n in range(60)]), tmp_path / "p.svg")
    _assert_labels_apart_and_inside(figures[0], of=60)


@pytest.mark.slow  # 5 s on 2 cores (the default run's heaviest); .ci/run runs it with -m slow
def test_probability_frontier_plot_from_the_command_line(tmp_path, figures):
    from typer.testing import CliRunner
    from planopt.cli import app
    res = CliRunner().invoke(app, ["frontier", str(INSTANCES / "tiny.json"), "--x", "cost_usd", "--y", "probability",
                                   "--scenarios", "100", "--plot", str(tmp_path / "p.png")])
    assert res.exit_code == 0, res.stderr
    ax = figures[0].axes[0]
    texts = [t.get_text() for t in _annotations(ax)]
    title = ax.get_title()
    assert title.startswith("tiny-math-qwen3-1.7b: expected cost against the probability")
    # what every point shares is said once, in the title, and in no point's label
    shared = title.split("every point: ", 1)[1].split(" · ")
    assert texts and "OPD" in shared
    # the scenarios draw the fp8 teacher's score penalty (issue 27, lever 6): bf16 buys probability at some points, so
    # the precision is not shared and the points that score in fp8 say so in their labels
    assert "fp8 teacher" not in shared and any("fp8 teacher" in text for text in texts)
    assert not any(part in text for text in texts for part in shared)


def test_change_labels_name_the_adapter_when_it_changes():
    from dataclasses import replace
    base = _opd(100)
    plans = [base, Plan.of(replace(base.recipe, lora_rank=16), replace(base.hardware, lora_rank=16), 240.0)]
    labels, common = change_labels(plans)
    assert labels == ["full weights", "LoRA rank 16"] and "steps" not in labels[1] and "100 steps" in common


def test_change_labels_of_one_plan_name_the_whole_plan():
    labels, common = change_labels([_opd(1000)])
    assert labels == ["OPD · 8×H100-SXM · 1,000 steps · 8→4→4 samples · fp8 teacher · full weights · ckpt 240 min"] and common == ""


# --- item 24: names that are not plain text ----------------------------------------------------------------
def test_figure_text_is_literal_and_idempotent():
    assert figure_text("cost $x^$") == "cost \\$x^\\$"
    assert figure_text(figure_text("cost $x^$")) == figure_text("cost $x^$")
    assert figure_text("a\ud800b") == "a\\ud800b"
    assert printable("a\ud800b").encode("utf-8") == b"a\\ud800b"


@pytest.mark.parametrize("name,suffix", list(zip(WEIRD_NAMES, [".png", ".svg", ".pdf", ".png"])))
def test_weird_names_draw_in_every_plot(tmp_path, figures, tiny_sweep_rows, name, suffix):
    gpu = f"GPU {name}"  # a custom GPU's name reaches the point labels
    plans = [_opd(100, gpu=gpu), _opd(200, gpu=gpu), _opd(200, gpu="H100-SXM")]
    assert plots.plot_frontier(_frontier(plans, [1, 2, 3], [4, 5, 6]), tmp_path / f"f{suffix}", name=name).exists()
    assert plots.plot_sweep(tiny_sweep_rows, tmp_path / f"s{suffix}", name=name).exists()
    frontier_title = figures[0].axes[0].get_title()
    assert figure_text(name) in frontier_title  # drawn as typed: escaped, not parsed as mathtext


def test_weird_names_in_the_risk_and_schedule_plots(tmp_path):
    from planopt.report.portfolio_plot import plot_schedule
    from planopt.uncertainty.risk import plan_risk
    from planopt.report.risk import plot_risk
    inst = load_instance(INSTANCES / "tiny.json")
    plan = PlanModel(inst).solve().plan
    for n, name in enumerate(WEIRD_NAMES):
        plot_risk(plan_risk(inst, plan, 200, 0), tmp_path / f"r{n}.svg", name)
        assert (tmp_path / f"r{n}.svg").exists()
    hours = {(0, "reserved"): 4.0, (1, "spot"): 2.0}
    gang = SimpleNamespace(count=1, pool=WEIRD_NAMES[2], gpu_hours=hours)   # a GPU's name reaches the row labels
    job = SimpleNamespace(name=WEIRD_NAMES[0], plan=_opd(100, gpu=WEIRD_NAMES[2]), release_bucket=0, deadline_bucket=1,
                          gpu_hours=hours, gangs=[gang])
    result = SimpleNamespace(jobs=[job], buckets=2, bucket_hours=24.0, name=WEIRD_NAMES[1], status="optimal",
                             cost_usd=100.0, reserved={"H100-SXM": 1})
    assert plot_schedule(result, tmp_path / "g.pdf").exists()


def test_weird_names_in_the_text_report():
    import planopt
    from planopt.report.text import solve_report
    raw = json.loads((INSTANCES / "tiny.json").read_text())
    for name in WEIRD_NAMES:
        inst = load_instance({**raw, "name": name})
        text = solve_report(inst, planopt.solve(inst, sensitivity=False))
        text.encode("utf-8")  # a lone surrogate would raise here, and on any terminal
        assert printable(name) in text


def test_a_failed_plot_leaves_no_file(tmp_path, monkeypatch):
    """Figures are written to a temporary file and renamed: a draw that fails leaves nothing behind."""
    from matplotlib.figure import Figure

    def boom(self, *args, **kwargs):
        raise RuntimeError("draw failed")

    monkeypatch.setattr(Figure, "savefig", boom)
    with pytest.raises(RuntimeError):
        plots.plot_frontier(_frontier([_opd(100)], [1], [2]), tmp_path / "f.png")
    assert list(Path(tmp_path).iterdir()) == []
