"""The plan space as arithmetic that adds up, the line of ``planopt validate`` and of the service's
``/validate``: the instance's options multiplied out, then what the model keeps of them."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plan_space_line(pm) -> str:
    """The plan space as arithmetic that adds up: the instance's options, then what the model keeps of them."""
    d = pm.space
    if d.staged:
        from planopt.oracles.by_plan import space_size as staged_space_size
        sequences = ", ".join(" → ".join(q) for q in d.sequences)
        why = [f"{reason}: {n:,}" for reason, n in d.dropped.items() if n]
        return (f"{staged_space_size(pm.inst):,} staged plans over the sequences {sequences} (per sequence, each stage's "
                f"recipes × hardware options, × {len(d.intervals)} checkpoint intervals); the model keeps {d.plans:,}"
                + (f" ({'; '.join(why)})" if why else ""))
    if pm.inst.candidate_students:
        inst = pm.inst
        parts = [f"{name}: {plan_space_line_of(inst.for_student(name))}" for name in inst.student_names()]
        return f"{len(parts)} students · " + " · ".join(parts)
    return plan_space_line_of(pm.evaluator.inst, d.slots[0])


def plan_space_line_of(inst, data=None) -> str:
    """One student's plan space (and, with ``data``, what the model keeps of it), and the counts left out because
    no catalog offer holds them (``cost/hardware.unheld_counts``)."""
    from planopt.models.cost.hardware import unheld_counts
    line = _space_line(inst, data)
    unheld = unheld_counts(inst)
    return line + (f" · left out: {'; '.join(unheld)}" if unheld else "")


def _space_line(inst, data=None) -> str:
    from planopt.models.cost.evaluator import Evaluator
    ev = Evaluator(inst)
    recipes, hardware, intervals = (len(options) for options in ev.space())
    n_k = len(ev.retention_options())  # a retention block's options multiply the plans (models/cost/retention.py)
    times_k, k = (f" × {n_k:,} retention options", n_k) if n_k else ("", 1)
    if data is None:
        return (f"{recipes:,} recipes × {hardware:,} hardware options × {intervals:,} intervals{times_k}"
                f" = {recipes * hardware * intervals * k:,} plans")
    d = data
    kept = (len(d.recipes), len(d.hardware), len(d.intervals))
    line = (f"{recipes:,} recipes × {hardware:,} hardware options × {intervals:,} checkpoint intervals{times_k}"
            f" = {recipes * hardware * intervals * k:,} plans")
    if kept != (recipes, hardware, intervals):
        why = [f"{reason}: {n:,}" for reason, n in getattr(d, "dropped", {}).items() if n]  # the model's own account
        line += (f"; the model keeps {kept[0]:,} × {kept[1]:,} × {kept[2]:,}{times_k} = {kept[0] * kept[1] * kept[2] * k:,}"
                 + (f" ({'; '.join(why)})" if why else ""))
    return line


class Checked:
    """An instance checked as ``planopt validate`` checks it: its schema, its model size (every job's, for
    a portfolio), its model built. ``kind`` is ``job`` or ``portfolio``; ``model`` the built model;
    for a job ``plan_space`` (the arithmetic of its plans) and ``model_mib`` (the model's estimated size),
    for a portfolio ``plans`` (over its jobs)."""

    def __init__(self, kind: str, model, plan_space: str | None = None, model_mib: float | None = None,
                 plans: int | None = None):
        self.kind, self.model, self.plan_space, self.model_mib, self.plans = kind, model, plan_space, model_mib, plans


def validate_instance(source: str | Path | dict[str, Any], label: str = "instance") -> Checked:
    """``planopt validate`` (the CLI and ``POST /api/validate``): the instance, a job or a portfolio, checked
    and its model built without solving; InputError naming the field, with the line solve gives (``job/checks.py``)."""
    from planopt.errors import read_json
    data = source if isinstance(source, dict) else read_json(source)
    if data.get("kind") == "portfolio":
        from planopt.portfolio.loading import check_portfolio
        from planopt.portfolio.solve import PortfolioModel, load_portfolio
        portfolio = load_portfolio(source)
        plans = check_portfolio(portfolio)  # solve's own refusals (its job count, each job's model), with its lines
        return Checked("portfolio", PortfolioModel(portfolio), plans=plans)
    from planopt.job.checks import check_job
    from planopt.job.model import PlanModel
    from planopt.instance import load_instance
    inst = load_instance(source)
    space = check_job(inst)  # every refusal solve makes of a parsed job, with the same line
    pm = PlanModel(inst)
    return Checked("job", pm, plan_space=plan_space_line(pm), model_mib=space.model_mib)
