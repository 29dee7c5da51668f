"""Frontier and sweep benchmark: exact ε-constraint frontier vs NSGA-II, persistent sweep vs rebuilding.

Run:  python benchmarks/bench_frontier.py   (its tables are in BENCHMARKS.md §2)
Prints markdown tables; every figure in one table is measured in the same run.

1. The exact cost-vs-quality frontier of instances/qwen3-8b-math.json (as
   shipped, and with its limits removed, which leaves a longer frontier), and
   pymoo's NSGA-II given the same wall time (and a tenth of it) over the same discrete decision
   space: a plan is three integers indexing the recipe, hardware and
   checkpoint-interval lists of ``Evaluator(inst).space()``, scored by
   ``Evaluator.metrics``; a plan with ``Metrics.violations`` is infeasible and
   its constraint violation is how far it misses each limit (relative to the
   limit) plus 1 if it does not fit in memory. Reported: the share of the exact
   points whose metric vector NSGA-II evaluated (final population, and every
   feasible plan it ever evaluated), and the hypervolume ratio of its best
   non-dominated set to the exact frontier's, in (log10 cost, quality)
   normalised to the exact frontier's range (cost spans decades, so a linear
   axis would weigh only the most expensive SFT plans).
2. A sweep of 100 budgets: re-solving one persistent model (with the exact
   reuse of a still-feasible optimum, and re-solving every value) against
   building and solving 100 models.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

import numpy as np

from planopt.instance import load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.models.formulation import LIMITS
from planopt.oracles.by_plan import all_plans
from planopt.job.model import PlanModel

ROOT = Path(__file__).resolve().parent.parent
INSTANCE = ROOT / "instances" / "qwen3-8b-math.json"
NSGA_SEEDS = (1, 2, 3)
SHORTER = (0.1,)  # NSGA-II is also run with this share of the exact frontier's time
POP_SIZE = 60
REL = 1e-6


def pareto_frontier(pm, x, y):
    from planopt.studies.frontier import pareto_frontier as exact
    return exact(pm, x, y)


def variants():
    raw = json.loads(INSTANCE.read_text())
    return [("as shipped", raw), ("limits removed", {**raw, "constraints": {}})]


# --- NSGA-II over the same discrete space -------------------------------------

def nsga2(inst, seconds: float, seed: int):
    from pymoo.algorithms.moo.nsga2 import NSGA2
    from pymoo.core.problem import ElementwiseProblem
    from pymoo.operators.crossover.sbx import SBX
    from pymoo.operators.mutation.pm import PM
    from pymoo.operators.repair.rounding import RoundingRepair
    from pymoo.operators.sampling.rnd import IntegerRandomSampling
    from pymoo.optimize import minimize
    from pymoo.termination.max_time import TimeBasedTermination

    ev = Evaluator(inst)
    recipes, hardware, intervals = ev.space()
    limits = inst.constraints.model_dump()
    seen: dict[tuple[int, int, int], tuple[float, float, bool]] = {}

    class PlanProblem(ElementwiseProblem):
        def __init__(self):
            super().__init__(n_var=3, n_obj=2, n_ieq_constr=1, xl=np.zeros(3),
                             xu=np.array([len(recipes) - 1, len(hardware) - 1, len(intervals) - 1]), vtype=int)

        def _evaluate(self, x, out, *args, **kwargs):
            key = tuple(int(round(v)) for v in x)
            m = ev.metrics(recipes[key[0]], hardware[key[1]], intervals[key[2]])
            violation = 0.0 if m.fits_memory else 1.0
            for name, limit in limits.items():
                if limit is None:
                    continue
                value = getattr(m, LIMITS[name][0])
                miss = value - limit if LIMITS[name][1] == "<=" else limit - value
                violation += max(0.0, miss) / max(1.0, abs(limit))
            if m.violations and violation <= 0:
                violation = 1e-9  # infeasible by the evaluator's own rule
            seen[key] = (m.cost_usd, m.quality, not m.violations)
            out["F"] = [m.cost_usd, -m.quality]
            out["G"] = [violation]

    algorithm = NSGA2(pop_size=POP_SIZE, sampling=IntegerRandomSampling(),
                      crossover=SBX(prob=0.9, eta=15, vtype=float, repair=RoundingRepair()),
                      mutation=PM(eta=20, vtype=float, repair=RoundingRepair()), eliminate_duplicates=True)
    res = minimize(PlanProblem(), algorithm, TimeBasedTermination(max_time=seconds), seed=seed, verbose=False)
    final = []
    if res.X is not None:
        X = np.atleast_2d(res.X)
        for x in X:
            c, q, feasible = seen[tuple(int(round(v)) for v in x)]
            if feasible:
                final.append((c, q))
    archive = [(c, q) for c, q, feasible in seen.values() if feasible]
    return final, archive, len(seen)


def non_dominated(vectors):
    """(cost min, quality max) non-dominated vectors, sorted by cost; qualities within 1e-6 relative count as equal."""
    out, best_q = [], -math.inf
    for c, q in sorted(set(vectors), key=lambda v: (v[0], -v[1])):
        if not out or q > best_q + REL * max(1.0, abs(best_q)):
            out.append((c, q))
            best_q = q
    return out


def matched(exact, found) -> int:
    return sum(any(math.isclose(c, fc, rel_tol=REL) and math.isclose(q, fq, rel_tol=REL) for fc, fq in found)
               for c, q in exact)


def hypervolume(points, exact) -> float:
    """Dominated area in (log10 cost, -quality), normalised to the exact frontier's box; reference just past its nadir."""
    lc = [math.log10(c) for c, _ in exact]
    qs = [q for _, q in exact]
    lo_c, hi_c, lo_q, hi_q = min(lc), max(lc), min(qs), max(qs)
    span_c, span_q = max(hi_c - lo_c, 1e-12), max(hi_q - lo_q, 1e-12)
    ref = 1.1  # the nadir is at 1.0 after normalisation
    pts = sorted(((math.log10(c) - lo_c) / span_c, (hi_q - q) / span_q) for c, q in points)
    area, prev_y = 0.0, ref
    for x, y in pts:  # minimisation in both normalised coordinates
        if x >= ref or y >= prev_y:
            continue
        area += (ref - x) * (prev_y - y)
        prev_y = y
    return area


def frontier_table() -> list[str]:
    rows = ["| instance (plans in space) | exact points | MIP solves | exact (MIP) s | enumeration s | NSGA-II s (pop 60) | seed | "
            "distinct plans evaluated | exact points in final population | exact points ever evaluated | hypervolume ratio (final) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, raw in variants():
        inst = load_instance(raw)
        front = pareto_frontier(PlanModel(inst), "cost_usd", "quality")
        exact = [(p.metrics.cost_usd, p.metrics.quality) for p in front.points]
        seconds = front.seconds
        hv_exact = hypervolume(exact, exact) if exact else 0.0
        start = time.perf_counter()  # the same frontier by brute force, for scale
        brute = non_dominated([(p.metrics.cost_usd, p.metrics.quality) for p in all_plans(inst) if p.feasible])
        t_enum = time.perf_counter() - start
        if matched(exact, brute) != len(exact) or matched(brute, exact) != len(brute):
            print(f"  WARNING: enumeration's frontier ({len(brute)} points) differs from the MIP's ({len(exact)})", file=sys.stderr)
        recipes, hardware, intervals = Evaluator(inst).space()
        size = len(recipes) * len(hardware) * len(intervals)
        budgets = [(seconds, seed) for seed in NSGA_SEEDS] + [(seconds * f, seed) for f in SHORTER for seed in NSGA_SEEDS]
        for nsga_seconds, seed in budgets:
            final, archive, evaluated = nsga2(inst, nsga_seconds, seed)
            nd = non_dominated(final)
            hv = hypervolume(nd, exact) / hv_exact if exact and hv_exact > 0 else float("nan")
            n = len(exact)
            rows.append(f"| qwen3-8b-math ({name}, {size:,}) | {n} | {front.solves} | {seconds:.2f} | {t_enum:.2f} | {nsga_seconds:.2f} | {seed} | {evaluated:,} | "
                        f"{matched(exact, nd)}/{n} ({matched(exact, nd) / max(n, 1):.0%}) | "
                        f"{matched(exact, archive)}/{n} ({matched(exact, archive) / max(n, 1):.0%}) | {hv:.3f} |")
        print(f"  frontier {name}: {len(exact)} points in {seconds:.2f} s", file=sys.stderr)
    return rows


# --- sweeps ---------------------------------------------------------------------

def sweep_cases():
    raw = json.loads(INSTANCE.read_text())
    return [("as shipped, objective cost", raw, [2000 + i * (60000 - 2000) / 99 for i in range(100)]),
            ("limits removed, objective quality", {**raw, "constraints": {}, "objective": "quality"},
             [2000 + i * (6000 - 2000) / 99 for i in range(100)])]


def sweep_table() -> list[str]:
    from planopt.studies.sweep import run_sweep
    rows = ["| sweep of 100 budgets | rebuild + solve ×100 s | persistent, every value re-solved s | speed-up | "
            "persistent with exact reuse s (solves) | speed-up | distinct plans | rows agree |",
            "|---|---:|---:|---:|---:|---:|---:|---|"]
    for name, raw, budgets in sweep_cases():
        inst = load_instance(raw)
        start = time.perf_counter()
        fresh = [PlanModel(inst.with_overrides(budget_usd=b)).solve() for b in budgets]
        t_fresh = time.perf_counter() - start
        start = time.perf_counter()
        every = run_sweep(PlanModel(inst), "budget_usd", budgets, reuse=False)
        t_every = time.perf_counter() - start
        start = time.perf_counter()
        reused = run_sweep(PlanModel(inst), "budget_usd", budgets, reuse=True)
        t_reuse = time.perf_counter() - start
        solves = sum(not r.reused for r in reused)
        agree = all(_same(f, a.result, inst.objective) and _same(f, b.result, inst.objective)
                    for f, a, b in zip(fresh, every, reused))
        plans = len({r.result.plan for r in reused if r.result.plan})
        rows.append(f"| qwen3-8b-math ({name}), {budgets[0]:,.0f}–{budgets[-1]:,.0f} USD | {t_fresh:.2f} | {t_every:.2f} | "
                    f"{t_fresh / t_every:.1f}× | {t_reuse:.2f} ({solves}) | {t_fresh / t_reuse:.1f}× | {plans} | "
                    f"{'yes' if agree else 'NO'} |")
        print(f"  sweep {name}: fresh {t_fresh:.2f} s, persistent {t_every:.2f} s, reuse {t_reuse:.2f} s", file=sys.stderr)
    return rows


def _same(a, b, objective) -> bool:
    if a.status != b.status:
        return False
    if a.metrics is None:
        return True
    return (math.isclose(a.metrics.objective(objective), b.metrics.objective(objective), rel_tol=REL, abs_tol=REL)
            and math.isclose(a.metrics.cost_usd, b.metrics.cost_usd, rel_tol=REL))


if __name__ == "__main__":
    import platform
    print(f"_Python {platform.python_version()}, HiGHS via highspy, 1 solver thread; "
          f"{time.strftime('%Y-%m-%d')}; `python benchmarks/bench_frontier.py`._\n")
    print("### Exact cost-vs-quality frontier vs NSGA-II (same wall time and a tenth of it, same discrete space)\n")
    print("\n".join(frontier_table()))
    print("\n### Budget sweep: one persistent model vs rebuilding\n")
    print("\n".join(sweep_table()))
