"""The figures README's "Asynchronous OPD" states are what the solver finds (issue 27, lever 6)."""

from __future__ import annotations

import json
import re

import planopt
from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp

from tests.support.common import INSTANCES, ROOT

README = (ROOT / "README.md").read_text()
LINE = next(line for line in README.splitlines() if line.startswith("**Asynchronous OPD.**"))


def _job(on: bool = True) -> dict:
    data = json.loads((INSTANCES / "qwen3-8b-math.json").read_text())
    data["hardware"]["rollout_gpus"] = [{"name": "MI300X", "counts": [8, 16]}]
    data["training"]["staleness_steps_options"] = [0, 1]
    data["training"]["asynchronous_opd"] = on
    return data


def test_the_stated_prior_and_its_spread_are_the_defaults():
    stated = re.search(r"= `priors\.opd_staleness_gain_loss_per_step` = (?P<d>[\d.]+).*range of (?P<lo>[\d.]+)–(?P<hi>[\d.]+)",
                       LINE)
    assert float(stated["d"]) == d.OPD_STALENESS_GAIN_LOSS_PER_STEP == d.STALENESS_GAIN_LOSS_PER_STEP
    assert (float(stated["lo"]), float(stated["hi"])) == sp.ABSOLUTE_OPD_STALENESS_GAIN_LOSS_PER_STEP


def test_the_stated_optimum_is_the_solvers():
    stated = re.search(r"on (?P<n>\d+) × MI300X training and (?P<r>\d+) × MI300X generating \((?P<steps>\d+) steps, "
                       r"(?P<k>[\d → ]+) samples, (?P<prec>\w+) teacher\): generation's (?P<gen>[\d.]+) h hide behind "
                       r"scoring and training \((?P<side>[\d.]+) h\), and the job costs \$(?P<cost>[\d,]+) in "
                       r"(?P<hours>[\d.]+) h, quality (?P<q>[\d.]+), against the synchronous \$(?P<c0>[\d,]+) in "
                       r"(?P<h0>[\d.]+) h at (?P<q0>\d+\.\d+)", LINE)
    res = planopt.solve(_job(), sensitivity=False)
    p, m = res.plan, res.metrics
    (stage,) = p.stages
    assert (p.method, stage.recipe.staleness_steps, p.gpu, p.gpu_count, stage.hardware.rollout_gpu,
            stage.hardware.rollout_count) == ("opd", 1, "MI300X", int(stated["n"]), "MI300X", int(stated["r"]))
    assert (p.steps, " → ".join(map(str, p.samples_per_prompt)), p.teacher_precision) == \
        (int(stated["steps"]), stated["k"].strip(), stated["prec"])
    hb = m.hours_breakdown
    assert f"{hb['generation']:.1f}" == stated["gen"] and f"{hb['scoring'] + hb['training']:.1f}" == stated["side"]
    assert hb["async_overlap"] < 0
    assert (f"{m.cost_usd:,.0f}", f"{m.wall_hours:.1f}", f"{m.quality:.2f}") == (stated["cost"], stated["hours"], stated["q"])
    off = planopt.solve(json.loads((INSTANCES / "qwen3-8b-math.json").read_text()), sensitivity=False).metrics
    assert (f"{off.cost_usd:,.0f}", f"{off.wall_hours:.1f}", f"{off.quality:.2f}") == (stated["c0"], stated["h0"], stated["q0"])
