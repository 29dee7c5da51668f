"""The refusals ``solve`` makes of a job once its schema and consistency checks have passed, in one place.

``planopt validate`` (``report/plan_space.validate_instance``) and ``planopt solve`` (``uncertainty/solve.py``)
both run :func:`check_job`, so an instance ``validate`` calls valid is one ``solve`` starts on, and one it
refuses is refused by both with the same line (issue 28 item 7; ``tests/solver/cli/test_refusals.py``):

- the model's estimated memory over the cap (``plan_space.check_model_size``), naming the option that makes it large;
- with ``constraints.confidence``, a space the scenario layer does not price (three stages:
  ``formulation/scenarios.check_scenarios_apply``).

A portfolio's are ``portfolio/loading.check_portfolio``: its jobs' own models and its job count.
"""

from __future__ import annotations

from planopt.errors import InputError
from planopt.job.plan_space import PlanSpace, check_model_size


def check_job(inst) -> PlanSpace:
    """The job's plan space when ``solve`` would start on it; else the InputError ``solve`` raises, naming the field.
    (A time limit's refusal, ``plan_space.check_build_time``, depends on the option, so validate has none.)"""
    space = check_model_size(inst)
    if inst.constraints.confidence is not None:
        from planopt.models.formulation.scenarios import check_scenario_stages
        try:  # the scenario layer's own check, on the sequences (before any space is built)
            check_scenario_stages(max(len(q) for q in inst.training.sequences()))
        except ValueError as exc:
            raise InputError(str(exc)) from None
    return space
