"""A single job's plan space as arithmetic that adds up: the instance's options, then what the model keeps
of them (``planopt validate``'s line, and ``plan_space`` of its JSON)."""

from __future__ import annotations


def plan_space_line(pm) -> str:
    """The plan space as arithmetic that adds up: the instance's options, then what the model keeps of them."""
    from planopt.job.candidates import CandidatePlanModel
    from planopt.job.staged import StagedPlanModel
    if isinstance(pm, StagedPlanModel):
        from planopt.oracles.staged import staged_space_size
        d = pm.data
        sequences = ", ".join(" → ".join(q) for q in d.sequences)
        why = [f"{reason}: {n:,}" for reason, n in d.dropped.items() if n]
        return (f"{staged_space_size(pm.inst):,} staged plans over the sequences {sequences} (per sequence, each stage's "
                f"recipes × hardware options, × {len(d.intervals)} checkpoint intervals); the model keeps {d.plans:,}"
                + (f" ({'; '.join(why)})" if why else ""))
    if isinstance(pm, CandidatePlanModel):
        inst = pm.inst
        parts = [f"{name}: {plan_space_line_of(inst.for_student(name))}" for name in inst.student_names()]
        return f"{len(parts)} students · " + " · ".join(parts)
    return plan_space_line_of(pm.evaluator.inst, pm.data)


def plan_space_line_of(inst, data=None) -> str:
    """One student's plan space (and, with ``data``, what the model keeps of it)."""
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
