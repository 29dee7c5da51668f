"""Staged plans (issue 12): the staged MIP against a vectorised numpy enumeration, from 10^6 to 10^11 plans.

Run:  python benchmarks/bench_staged.py [--sizes 1e6,1e8,1e10,1e11[,1e12]] [--settings shipped,floor,quality]
                                         [--enum-budget 120] [--mip-time-limit 900] [--cli-runs 5] [--no-cli]

The ladder (``LADDER``) is made of edits of ``instances/qwen3-8b-math.json`` (it has a
teacher, so all three methods) with ``training.stage_sequences`` of two and three
stages (sft→rl, sft→opd, rl→opd, sft→rl→opd, and rl alone) and more GPU types, GPU
counts, samples-per-prompt options, training lengths and checkpoint intervals. Plans
are counted by ``planopt.oracles.by_plan.space_size``. Each size is run under several
limit settings (``SETTINGS``): the instance's own limits (cost objective), a cost
objective with a high quality floor and a tight deadline, and a quality objective
under a budget.

The MIP: ``PlanModel(inst)`` (build, timed) then ``.solve()`` (timed), in a child
process of its own, so its peak resident memory is its own. The baseline: a vectorised
numpy enumeration written as a user would write it (``enumerate_staged`` below), over
the same profiles (``collect_space(Evaluator(inst), prune=False)``: every
recipe, every hardware choice, every interval). Per sequence it broadcasts every
(recipe, hardware) pair of each stage that fits in memory against the others' and every
interval, a chunk of about ``CHUNK`` plans at a time: cost = fixed + the stages' own
money + repair × forgetting, wall = the stages' walls, quality and forgetting from the
pair tables (``pair_end``, ``pair_forget``) and, for a third stage, its affine map
(``stage_outcomes.affine_stage``); feasibility by the evaluator's limit rule
(``costs.exceeds``); the best by the lexicographic rule (the best objective, then the
cheapest within ``TIE_BREAK_RELATIVE``). Its best plan is re-scored by the staged
evaluator (``Evaluator.plan_metrics``) and must give the same objective as the MIP's (asserted).

It first runs ``PROBE_CHUNKS`` chunks of each sequence; when the time those chunks
project for the whole space is over ``--enum-budget`` seconds it stops there and
reports the projection (time per plan of the probed chunks × plans), marked
"extrapolated"; otherwise it runs to the end and reports the measured time.

Wall and CPU seconds are both reported (the machine is shared: wall time includes
waiting for a core). Each child may use ``MEMORY_CAP_GIB`` of address space and
``CHILD_TIMEOUT_S`` of wall time; the MIP's HiGHS log (and every child's stderr) is
kept in ``LOG_DIR``. Sizes in ``FIRST_SETTING_ONLY`` run under the first setting only.

First, ``planopt solve FILE`` (the CLI, a subprocess, median of ``--cli-runs``) on each
shipped instance whose JSON has ``stage_sequences``, or, when there is none, on the
ladder's smallest staged instance and on ``qwen3-8b-math.json`` with the ladder's
sequences added (written to temporary files), and on ``instances/qwen3-8b-math.json``,
against ``python -c "import pyomo.environ"`` as the floor.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPUS = ["H100-SXM", "H200", "A100-80GB", "B200", "MI300X", "L40S", "A100-40GB", "H100-PCIe", "MI325X", "GB200"]
COUNTS = [8, 16, 32, 64, 24, 48, 96, 128]
SAMPLES = [16, 8, 4, 2, 12, 32]
INTERVALS = [10, 20, 30, 60, 120, 240, 15, 45, 90, 180, 360, 480]
STEP_FACTORS = (1.5, 2, 0.75, 3, 0.5)
SEQUENCES = [["sft", "rl"], ["sft", "opd"], ["rl", "opd"], ["sft", "rl", "opd"], ["rl"]]
# size label -> (GPU types, counts per type, samples-per-prompt options, extra training lengths per method, intervals)
LADDER = {"1e6": (2, 2, 2, 0, 2), "1e8": (3, 3, 3, 0, 3), "1e10": (5, 4, 4, 0, 8), "1e11": (6, 5, 4, 1, 12), "1e12": (8, 6, 5, 2, 12)}
# sizes run under the first setting only (each MIP run there takes many minutes on the shared machine)
FIRST_SETTING_ONLY: set[str] = set()  # sizes run under the first setting only (none since the MIP takes seconds at 10^11)
CHUNK = 2**19            # plans per chunk of the enumeration (2^15..2^21 tried at 1e8 plans: within the noise)
PROBE_CHUNKS = 8         # chunks per sequence timed before deciding to run the whole space or to extrapolate
MEMORY_CAP_GIB = 12      # address space per child process (the machine has 24 GiB, shared)
CHILD_TIMEOUT_S = 1200.0  # wall seconds per child (build, load into HiGHS, solve, extract); over it, killed
CLI_TIMEOUT_S = 300.0    # wall seconds per CLI run; over it, killed and reported as such
CLI_MAX_S = 150.0        # a CLI command is repeated until it has taken this long (at most --cli-runs times)
LOG_DIR = Path(tempfile.gettempdir()) / "bench_staged_logs"   # each child's stderr: the MIP's HiGHS log


def _floor(data: dict) -> None:
    data["objective"] = "cost"
    data["constraints"] = {"min_quality": 70.5, "deadline_hours": 48.0, "max_forgetting_points": 3.0}


def _quality(data: dict) -> None:
    data["objective"] = "quality"
    data["constraints"] = {"budget_usd": 25000.0, "deadline_hours": 168.0, "max_forgetting_points": 3.0}


# setting -> (what the table says, how it edits the instance)
SETTINGS = {
    "shipped": ("cost; the instance's limits (budget $60k, deadline 168 h, forgetting 3, quality ≥ 70)", lambda d: None),
    "floor": ("cost; quality ≥ 70.5 (near the best reachable), deadline 48 h, forgetting 3", _floor),
    "quality": ("quality; budget $25k, deadline 168 h, forgetting 3", _quality),
}


def scaled(gpu_types: int, counts: int, samples: int, steps: int, intervals: int, setting: str = "shipped") -> dict:
    """qwen3-8b-math.json staged (``SEQUENCES``), with the first options of each list; each method keeps its
    own training lengths and ``steps`` more (multiples of them); the teacher keeps all of its precisions."""
    data = json.loads((ROOT / "instances" / "qwen3-8b-math.json").read_text())
    data["name"] = f"qwen3-8b-math staged x{gpu_types}.{counts}.{samples}.{steps}.{intervals}"
    data["training"]["stage_sequences"] = SEQUENCES
    data["hardware"]["gpus"] = [{"name": g, "counts": sorted(COUNTS[:counts])} for g in GPUS[:gpu_types]]
    data["training"]["samples_per_prompt_options"] = sorted(SAMPLES[:samples])
    data["checkpointing"]["interval_minutes_options"] = sorted(INTERVALS[:intervals])
    for levels in data["training"]["methods"].values():
        base = levels["steps_options"]
        extra = [s for s in dict.fromkeys(int(b * f) for f in STEP_FACTORS for b in base) if s not in base]
        levels["steps_options"] = sorted(base + extra[:steps])
    SETTINGS[setting][1](data)
    return data


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# ---------------------------------------------------------------------------------------------
# The baseline: a vectorised enumeration of every staged plan over the evaluator's profiles
# ---------------------------------------------------------------------------------------------

def enumerate_staged(inst, budget_s: float = 120.0, chunk: int = CHUNK, probe_chunks: int = PROBE_CHUNKS) -> dict:
    """The best staged plan by brute force with numpy (module docstring), or, when the probed chunks
    project more than ``budget_s`` seconds, that projection."""
    import numpy as np

    from planopt.models.cost.evaluator import LIMIT_METRIC, Evaluator, exceeds
    from planopt.models.formulation.space import collect_space
    from planopt.models.cost.stage_outcomes import affine_stage
    from planopt.job.model import TIE_BREAK_RELATIVE

    start, start_cpu = time.perf_counter(), time.process_time()
    ev = Evaluator(inst)
    sd = collect_space(ev, prune=False)
    n_i = len(sd.intervals)
    fixed, repair = inst.operations.fixed_usd, inst.forgetting_repair_usd_per_point
    limits = [(LIMIT_METRIC[k][0], v, LIMIT_METRIC[k][1]) for k, v in inst.constraints.model_dump().items()
              if k in LIMIT_METRIC and v is not None]
    objective = inst.objective

    def stage_table(s: int, method: str):
        """Every (recipe, hardware) pair of slot ``s`` running ``method`` that fits: recipe and hardware
        indices, and the stage's own money and wall hours at every interval [pair, interval]."""
        d = sd.slots[s]
        rows = np.array([r for r, rec in enumerate(d.recipes) if rec.method == method], dtype=int)
        same_adapter = np.array([[hw.lora_rank == d.recipes[r].lora_rank for hw in d.hardware] for r in rows], dtype=bool)
        ok = d.recipe_fits[rows] & same_adapter if len(rows) else np.zeros((0, len(d.hardware)), dtype=bool)
        ri, hi = np.nonzero(ok)
        r, h = rows[ri], hi
        train = d.compute_hours[r, h][:, None] * (1.0 + d.overhead[h])
        return r, h, d.recipe_usd[r][:, None] + d.hourly_usd[h][:, None] * train, d.lead_hours[r][:, None] + train

    window = 1e-6
    best = {"obj": np.inf}
    cands: list[tuple] = []   # (objective, cost, sequence, stage pair indices..., interval)

    def consider(q: int, cost, wall, quality, forgetting, index_of):
        """Keep the chunk's plans within the candidate window of the best so far; ``index_of(flat)``
        maps flat positions of the chunk to (pair per stage..., interval). Each metric comes in its own
        (broadcastable) shape: the limits on quality and forgetting are tested before broadcasting."""
        shape = np.broadcast_shapes(np.shape(cost), np.shape(wall), np.shape(quality), np.shape(forgetting))
        metric = {"cost_usd": cost, "wall_hours": wall, "quality": quality, "forgetting_points": forgetting}
        ok = True
        for name, limit, sense in sorted(limits, key=lambda x: np.size(metric[x[0]])):  # small arrays first
            ok = ok & ~exceeds(metric[name], limit, sense)
        obj = {"cost": cost, "time": wall, "quality": -quality, "forgetting": forgetting}[objective]
        obj = np.where(ok, obj, np.inf)
        if obj.shape != shape:
            obj = np.broadcast_to(obj, shape)
        b = obj.min()
        if not np.isfinite(b) or b > best["obj"] + window * max(1.0, abs(best["obj"])):
            return
        best["obj"] = min(best["obj"], b)
        sel = np.flatnonzero(obj <= best["obj"] + window * max(1.0, abs(best["obj"])))
        objs, costs = obj.reshape(-1)[sel], np.broadcast_to(cost, shape).reshape(-1)[sel]
        for o, c, idx in zip(objs.tolist(), costs.tolist(), index_of(sel)):
            cands.append((o, c, q) + idx)
        limit_obj = best["obj"] + window * max(1.0, abs(best["obj"]))
        cands[:] = [cd for cd in cands if cd[0] <= limit_obj]

    def third_stage_maps(r2):
        """The affine map of each third-stage recipe ``r2``: end A + B s, forgetting F0 + K |MA + MB s|."""
        d2 = sd.slots[2]
        aff = [affine_stage(inst, d2.recipes[r]) for r in range(len(d2.recipes))]
        return tuple(np.array([getattr(x, k) for x in aff])[r2] for k in (
            "end_constant", "end_slope", "forgetting_constant", "forgetting_per_point", "move_constant", "move_slope"))

    def chunks_of(q: int, seq: tuple, tabs: list, maps):
        """Generator over the sequence's chunks; yields the number of plans each chunk scored."""
        if len(seq) == 1:
            r0, _, c0, w0 = tabs[0]
            f = sd.forget0[r0][:, None]
            consider(q, fixed + c0 + repair * f, w0, sd.ends0[r0][:, None], f,
                     lambda sel: [(int(p), -1, -1, int(i)) for p, i in zip(*np.unravel_index(sel, c0.shape))])
            yield c0.size
            return
        (r0, _, c0, w0), (r1, _, c1, w1) = tabs[0], tabs[1]
        n0, n1 = len(r0), len(r1)
        if len(seq) == 2:
            b0 = max(1, chunk // max(1, n1 * n_i))
            for a in range(0, n0, b0):
                blk = slice(a, min(n0, a + b0))
                ra = r0[blk]
                f = (sd.forget0[ra][:, None] + sd.pair_forget[np.ix_(ra, r1)])[:, :, None]        # [b0, n1, 1]
                qual = sd.pair_end[np.ix_(ra, r1)][:, :, None]
                cost = (fixed + c0[blk][:, None, :]) + (c1[None, :, :] + repair * f)                # [b0, n1, I]
                wall = w0[blk][:, None, :] + w1[None, :, :]
                shape = cost.shape
                consider(q, cost, wall, qual, f, lambda sel, a=a, shape=shape: [
                    (a + int(p0), int(p1), -1, int(i)) for p0, p1, i in zip(*np.unravel_index(sel, shape))])
                yield cost.size
            return
        r2, _, c2, w2 = tabs[2]
        n2 = len(r2)
        A, B, F0, K, MA, MB = maps
        per_p0 = n1 * n2 * n_i
        if per_p0 <= chunk:   # blocks of first-stage pairs, every second-stage pair
            b0, b1 = max(1, chunk // max(1, per_p0)), n1
        else:                 # one first-stage pair, blocks of second-stage pairs
            b0, b1 = 1, max(1, chunk // max(1, n2 * n_i))
        for a in range(0, n0, b0):
            blk0 = slice(a, min(n0, a + b0))
            ra = r0[blk0]
            for b in range(0, n1, b1):
                blk1 = slice(b, min(n1, b + b1))
                rb = r1[blk1]
                mid = sd.pair_end[np.ix_(ra, rb)][:, :, None]                                    # [b0, b1, 1]
                qual = (A + B * mid)[..., None]                                                  # [b0, b1, n2, 1]
                f = (sd.forget0[ra][:, None, None] + sd.pair_forget[np.ix_(ra, rb)][:, :, None]
                     + F0 + K * np.abs(MA + MB * mid))[..., None]                                # [b0, b1, n2, 1]
                # the first two stages' money and hours [b0, b1, 1, I], then the third's and repair [.., n2, ..]
                cost = ((fixed + c0[blk0][:, None, None, :]) + c1[blk1][None, :, None, :]) + (c2 + repair * f)
                wall = (w0[blk0][:, None, None, :] + w1[blk1][None, :, None, :]) + w2[None, None, :, :]
                shape = cost.shape
                consider(q, cost, wall, qual, f, lambda sel, a=a, b=b, shape=shape: [
                    (a + int(p0), b + int(p1), int(p2), int(i)) for p0, p1, p2, i in zip(*np.unravel_index(sel, shape))])
                yield cost.size

    tables = {q: [stage_table(s, m) for s, m in enumerate(seq)] for q, seq in enumerate(sd.sequences)}
    maps = {q: third_stage_maps(tables[q][2][0]) if len(seq) == 3 else None for q, seq in enumerate(sd.sequences)}
    pairs_plans = {q: int(np.prod([len(t[0]) for t in tables[q]])) * n_i for q in tables}
    setup_s = time.perf_counter() - start    # profiles, stage tables, affine maps
    setup_cpu = time.process_time() - start_cpu
    # probe: PROBE_CHUNKS chunks of each sequence
    gens, seconds, cpu, done = {}, {}, {}, {}
    for q, seq in enumerate(sd.sequences):
        gens[q] = chunks_of(q, seq, tables[q], maps[q])
        t, c = time.perf_counter(), time.process_time()
        done[q] = 0
        for _ in range(probe_chunks):
            n = next(gens[q], None)
            if n is None:
                break
            done[q] += n
        seconds[q], cpu[q] = time.perf_counter() - t, time.process_time() - c
    elapsed = time.perf_counter() - start
    projected = setup_s + sum(seconds[q] / max(1, done[q]) * pairs_plans[q] for q in gens)
    projected_cpu = setup_cpu + sum(cpu[q] / max(1, done[q]) * pairs_plans[q] for q in gens)
    out = {"setup_s": setup_s, "fitting_plans": sum(pairs_plans.values()), "probed_plans": sum(done.values()),
           "projected_s": projected, "projected_cpu": projected_cpu}
    if projected > budget_s:
        out.update(status="extrapolated", total_s=projected, total_cpu=projected_cpu, probe_s=elapsed)
        return out
    for q in gens:
        for _ in gens[q]:
            pass
    out["total_s"], out["total_cpu"] = time.perf_counter() - start, time.process_time() - start_cpu
    if not cands:
        out.update(status="infeasible")
        return out
    best_obj = min(c[0] for c in cands)
    tie = [c for c in cands if c[0] <= best_obj + TIE_BREAK_RELATIVE * max(1.0, abs(best_obj))]
    pick = min(tie, key=lambda c: (c[1],) + c[2:])
    _, cost, q, p0, p1, p2, i = pick
    out.update(status="optimal", objective=pick[0], cost=cost, plan=_decode(sd, q, (p0, p1, p2), i, stage_table))
    return out


def _decode(sd, q: int, pairs: tuple, i: int, stage_table):
    """The StagedPlan of sequence ``q`` at pair indices ``pairs`` (per stage) and interval ``i``."""
    from planopt.models.schema.plan import Stage, Plan
    seq = sd.sequences[q]
    stages = []
    for s, m in enumerate(seq):
        r, h, _, _ = stage_table(s, m)
        d = sd.slots[s]
        stages.append(Stage(d.recipes[int(r[pairs[s]])], d.hardware[int(h[pairs[s]])]))
    return Plan(tuple(stages), sd.intervals[i], sd.evaluator.inst.student.preset)


# ---------------------------------------------------------------------------------------------
# children: one process per (side, size, setting), so that each peak memory is its own
# ---------------------------------------------------------------------------------------------

def child(kind: str, label: str, setting: str, budget_s: float, time_limit: float) -> dict:
    from planopt.instance import load_instance
    from planopt.models.cost.evaluator import Evaluator
    from planopt.oracles.by_plan import space_size
    from planopt.job.model import PlanModel  # imports before the clocks start (both sides import Pyomo)
    inst = load_instance(scaled(*LADDER[label], setting=setting))
    out = {"plans": space_size(inst), "base_mib": peak_mib()}
    if kind == "mip":
        from planopt.verbosity import VERBOSE, set_level
        set_level(VERBOSE)     # HiGHS's log on stderr, which run_child saves (LOG_DIR)
        t, c = time.perf_counter(), time.process_time()
        pm = PlanModel(inst)
        build_s, build_cpu = time.perf_counter() - t, time.process_time() - c
        t, c = time.perf_counter(), time.process_time()
        res = pm.solve(time_limit=time_limit)
        solve_s, solve_cpu = time.perf_counter() - t, time.process_time() - c
        out.update(build_s=build_s, solve_s=solve_s, build_cpu=build_cpu, solve_cpu=solve_cpu,
                   highs_s=res.solve_seconds, status=res.status, gap=res.gap,
                   recipes=[len(d.recipes) for d in pm.space.slots], hardware=[len(d.hardware) for d in pm.space.slots])
        try:
            h = pm.solver._h   # highspy (highs_arrays.ArrayHighs): of the last HiGHS run (the tie-break's, for quality)
            info = h.getInfo()
            out.update(nodes=int(info.mip_node_count), lp_iterations=int(info.simplex_iteration_count),
                       dual_bound=float(info.mip_dual_bound), rows=int(h.getNumRow()), cols=int(h.getNumCol()))
        except Exception as exc:  # the private handle may change; the table then leaves these out
            out["highs_info"] = repr(exc)
        if res.metrics is not None:
            out.update(objective=res.metrics.objective(inst.objective), cost=res.metrics.cost_usd,
                       quality=res.metrics.quality, plan=res.plan.to_dict())
    else:
        res = enumerate_staged(inst, budget_s=budget_s)
        out.update({k: v for k, v in res.items() if k != "plan"})
        if res.get("plan") is not None:
            m = Evaluator(inst).plan_metrics(res["plan"])       # re-scored by the staged evaluator
            out.update(eval_objective=m.objective(inst.objective), eval_cost=m.cost_usd, quality=m.quality,
                       plan=res["plan"].to_dict())
    out["peak_mib"] = peak_mib()
    return out


def _cap_memory() -> None:
    """A child may use at most MEMORY_CAP_GIB of address space (the machine is shared): over it, MemoryError."""
    cap = int(MEMORY_CAP_GIB * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))


def run_child(kind: str, label: str, setting: str, budget_s: float, time_limit: float) -> dict:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = LOG_DIR / f"{kind}-{label}-{setting}.log"
    try:
        proc = subprocess.run([sys.executable, __file__, "--child", kind, label, setting, str(budget_s), str(time_limit)],
                              capture_output=True, text=True, cwd=ROOT, preexec_fn=_cap_memory, timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        log.write_text(exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else (exc.stderr or ""))
        return {"error": f"not finished after {CHILD_TIMEOUT_S:.0f} s (killed)"}
    log.write_text(proc.stderr)
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        return {"error": ("MemoryError (over the cap of %g GiB)" % MEMORY_CAP_GIB) if "MemoryError" in proc.stderr
                else (lines or [f"exit {proc.returncode}"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


def _fmt_obj(setting: str, v) -> str:
    if v is None:
        return "-"
    return f"quality {-v:.3f}" if SETTINGS[setting][1] is _quality else f"${v:,.0f}"


def load() -> str:
    la = os.getloadavg()
    return f"{la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f}"


def ladder(labels: list[str], settings: list[str], budget_s: float, time_limit: float) -> list[str]:
    print("| size | plans | setting | MIP build s (CPU) | MIP solve s (CPU) | MIP total s (CPU) | HiGHS nodes | "
          "enumeration s (CPU) | enumeration / MIP (wall; CPU) | MIP objective (cost) | enumeration objective (cost) | "
          "MIP peak MiB | enumeration peak MiB | load before |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---|")
    failures = []
    for label in labels:
        for setting in (settings[:1] if label in FIRST_SETTING_ONLY else settings):
            before = load()
            mip = run_child("mip", label, setting, budget_s, time_limit)
            enum = run_child("enum", label, setting, budget_s, time_limit)
            if "error" in mip or "error" in enum:
                enum_s = enum.get("error") or (f"{enum['total_s']:,.1f} ({enum['status']})")
                print(f"| {label} | {enum.get('plans', mip.get('plans', 0)):,} | {setting} | MIP: {mip.get('error', '')} | | | | "
                      f"{enum_s} | | | | | | {before} |", flush=True)
                failures.append(f"{label}/{setting}: MIP {mip.get('error', 'ok')}; enumeration {enum.get('error', 'ok')}")
                print(json.dumps({"label": label, "setting": setting, "mip": mip, "enum": enum}), file=sys.stderr, flush=True)
                continue
            total, total_cpu = mip["build_s"] + mip["solve_s"], mip["build_cpu"] + mip["solve_cpu"]
            measured = enum["status"] != "extrapolated"
            enum_s = (f"{enum['total_s']:.1f} ({enum['total_cpu']:.1f}; the probe projected {enum['projected_s']:.1f})" if measured
                      else f"**~{enum['total_s']:,.0f} ({enum['total_cpu']:,.0f}) extrapolated** from {enum['probed_plans']:,} plans")
            mip_obj = _fmt_obj(setting, mip.get("objective")) + f" ({mip['status']}"
            if mip["status"] != "optimal" and mip.get("gap") is not None:
                mip_obj += f", gap {mip['gap']:.1e}"
            mip_obj += f"; ${mip['cost']:,.0f})" if mip.get("cost") is not None else ")"
            if measured and enum["status"] == "optimal":
                enum_obj = f"{_fmt_obj(setting, enum['eval_objective'])} (${enum['eval_cost']:,.0f})"
                # the enumeration's own numbers equal the evaluator's, and its optimum the MIP's
                assert _same(enum["objective"], enum["eval_objective"]), (label, setting, enum)
                assert _same(enum["cost"], enum["eval_cost"]), (label, setting, enum)
                if mip["status"] != "optimal":
                    failures.append(f"{label}/{setting}: the MIP stopped at {mip['status']}, the enumeration found the optimum")
                else:
                    assert _same(mip["objective"], enum["eval_objective"]), (label, setting, mip, enum)
                if mip["status"] == "optimal" and not _same(mip["cost"], enum["eval_cost"]):
                    failures.append(f"{label}/{setting}: same objective, cost tie-break differs")
            elif measured:
                enum_obj = enum["status"]
                assert mip["status"] in ("infeasible", "time_limit"), (label, setting, mip, enum)
            else:
                enum_obj = "- (not run to the end)"
            nodes = f"{mip['nodes']:,}" if "nodes" in mip else "-"
            mark = "" if measured else " (extrap.)"
            print(f"| {label} | {mip['plans']:,} | {setting} | {mip['build_s']:.2f} ({mip['build_cpu']:.2f}) | "
                  f"{mip['solve_s']:.2f} ({mip['solve_cpu']:.2f}) | {total:.2f} ({total_cpu:.2f}) | {nodes} | {enum_s} | "
                  f"{enum['total_s'] / total:,.1f}; {enum['total_cpu'] / total_cpu:,.1f}{mark} | {mip_obj} | {enum_obj} | "
                  f"{mip['peak_mib']:.0f} | {enum['peak_mib']:.0f} | {before} |", flush=True)
            print(json.dumps({"label": label, "setting": setting, "mip": mip, "enum": enum}), file=sys.stderr, flush=True)
    return failures


def time_command(cmd: list[str], runs: int, max_total_s: float = CLI_MAX_S) -> tuple[float, float, int, int]:
    """(median s, min s, last exit code, runs made): ``runs`` runs, fewer once they have taken ``max_total_s``."""
    times, rc = [], 0
    for _ in range(runs):
        t = time.perf_counter()
        try:
            rc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=CLI_TIMEOUT_S).returncode
        except subprocess.TimeoutExpired:
            rc = "killed"
        times.append(time.perf_counter() - t)
        if sum(times) > max_total_s:
            break
    return statistics.median(times), min(times), rc, len(times)


def cli(runs: int) -> None:
    planopt = str(Path(sys.executable).parent / "planopt")
    shipped = sorted(p for p in (ROOT / "instances").glob("*.json") if "stage_sequences" in json.loads(p.read_text()).get("training", {}))
    files: list[tuple[str, str]] = [(f"`{p.name}` (shipped, staged)", str(p)) for p in shipped]
    tmp = tempfile.mkdtemp(prefix="bench_staged_")
    if not shipped:
        smallest = min(LADDER, key=lambda k: float(k))
        path = Path(tmp) / "staged-smallest.json"
        path.write_text(json.dumps(scaled(*LADDER[smallest])))
        files.append((f"ladder's {smallest} staged instance (temp file)", str(path)))
        data = json.loads((ROOT / "instances" / "qwen3-8b-math.json").read_text())
        data["training"]["stage_sequences"] = SEQUENCES
        path = Path(tmp) / "qwen3-8b-math-staged.json"
        path.write_text(json.dumps(data))
        files.append(("`qwen3-8b-math.json` + the ladder's stage_sequences (temp file)", str(path)))
    files.append(("`qwen3-8b-math.json` (one stage, reference)", str(ROOT / "instances" / "qwen3-8b-math.json")))
    print(f"_CLI timings, load average before: {load()}_\n")
    print("| command | runs | median s | min s | exit code | median / bare Pyomo import | load before |")
    print("|---|---:|---:|---:|---:|---:|---|")
    before = load()
    floor, floor_min, _, n = time_command([sys.executable, "-c", "import pyomo.environ"], runs)
    print(f"| `python -c \"import pyomo.environ\"` (the floor) | {n} | {floor:.2f} | {floor_min:.2f} | 0 | 1.00 | {before} |", flush=True)
    for name, path in files:
        for extra in ([], ["--no-sensitivity"]):
            before = load()
            med, low, rc, n = time_command([planopt, "solve", path, *extra], runs)
            flag = " " + " ".join(extra) if extra else ""
            if rc == "killed":
                print(f"| `planopt solve{flag}` {name} | {n} | > {CLI_TIMEOUT_S:.0f} (killed) | | killed | > {CLI_TIMEOUT_S / floor:.0f} | {before} |",
                      flush=True)
                continue
            print(f"| `planopt solve{flag}` {name} | {n} | {med:.2f} | {low:.2f} | {rc} | {med / floor:.2f} | {before} |", flush=True)


def main(args) -> None:
    from planopt.instance import load_instance
    from planopt.oracles.by_plan import space_size
    labels, settings = args.sizes.split(","), args.settings.split(",")
    import planopt
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    print(f"_Started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load()} (1 / 5 / 15 min) "
          f"on {os.cpu_count()} cores; planopt imported from {Path(planopt.__file__).parent} ({ROOT} is at {head})._\n")
    print("| size | GPU types × counts, samples-per-prompt options, extra training lengths per method, intervals | plans |")
    print("|---|---|---:|")
    for label in labels:
        print(f"| {label} | {' × '.join(map(str, LADDER[label][:2]))}, {', '.join(map(str, LADDER[label][2:]))} | "
              f"{space_size(load_instance(scaled(*LADDER[label]))):,} |")
    print()
    if not args.no_cli:   # first: the CLI's figures do not wait on the long MIP runs of the ladder
        cli(args.cli_runs)
        print()
    failures = ladder(labels, settings, args.enum_budget, args.mip_time_limit)
    print(f"\n_Finished {time.strftime('%H:%M UTC', time.gmtime())}; load average {load()}._")
    for f in failures:
        print(f"- {f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e8,1e10,1e11")  # 1e12 on request: minutes per setting
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--enum-budget", type=float, default=120.0, help="seconds; above, the enumeration is extrapolated")
    ap.add_argument("--mip-time-limit", type=float, default=900.0, help="HiGHS time limit per run, seconds")
    ap.add_argument("--cli-runs", type=int, default=5)
    ap.add_argument("--no-cli", action="store_true")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        kind, label, setting, budget, limit = args.child
        print(json.dumps(child(kind, label, setting, float(budget), float(limit))))
    else:
        main(args)
