"""Loading a portfolio: the file or dict validated, its jobs resolved and checked, its size capped.

``load_portfolio`` is the Python API's loader (``planopt.load_portfolio``); every error is an
InputError naming the field. ``check_budget`` is the one rule for a total spend cap given as an
override (``--budget-usd``, the service's ``budget_usd``, ``solve_portfolio(budget_usd=...)``):
the single job's ``instance.check_limit`` with its schema-derived range, so a value one refuses
the other refuses too, with the same message.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planopt.models.schema.portfolio import Portfolio, PortfolioData, restrict_to_portfolio, shared_gpu_types

from planopt.errors import InputError, read_json, validation_input_error
from planopt.instance import check_limit, checked, instance_from


def check_budget(value: Any, label: str = "--budget-usd") -> float:
    """A total spend cap in USD, checked as a single job's ``budget_usd`` override
    (``instance.LIMIT_RANGES``: a finite number from 0 to the schema's ``MAX_MAGNITUDE``);
    InputError naming ``label`` otherwise."""
    return check_limit("budget_usd", value, label)


def load_portfolio(source: str | Path | dict[str, Any] | PortfolioData) -> PortfolioData:
    """A validated portfolio with its jobs resolved; raises InputError naming the field."""
    if isinstance(source, PortfolioData):
        return source
    name, base, from_file = "portfolio", Path.cwd(), False
    if not isinstance(source, dict):
        name, base, from_file = str(source), Path(source).resolve().parent, True
        source = read_json(source)
    try:
        portfolio = Portfolio.model_validate(source, context={"base_dir": base if from_file else None})
    except ValidationError as exc:
        raise validation_input_error(exc, name, name if from_file else None) from None
    instances = []
    for i, job in enumerate(portfolio.jobs):
        where = f"{name}: jobs.{i}.instance"
        raw = job.instance
        job_dir = base if from_file else None   # an hf_config path is read only for files (not a service's body)
        if isinstance(raw, str):
            path = (base / raw) if not Path(raw).is_absolute() else Path(raw)
            try:
                raw = read_json(path)
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
            where, job_dir = str(path), (path.resolve().parent if from_file else None)
        raw = priced_by_portfolio(raw, name, i)
        inst = instance_from(raw, where, job_dir, name if from_file else None)  # its shape, then its consistency checks
        refuse_unplanned_layers(inst, portfolio, name, i)
        restricted = f"{name}: jobs.{i} (restricted to the portfolio's GPUs)"
        try:
            job_inst = restrict_to_portfolio(inst, portfolio)
        except ValidationError as exc:
            raise validation_input_error(exc, restricted, name if from_file else None) from None
        instances.append(checked(job_inst, restricted))
    check_spot_preemptions(portfolio, instances, name)
    return PortfolioData(portfolio, instances)


def priced_by_portfolio(raw: Any, name: str, i: int) -> Any:
    """A job's instance object read with ``hardware.offers: reference``: the portfolio's ``gpus`` are its offers
    and prices (``restrict_to_portfolio``), so the job's own GPU entries are types, not catalog offers; a job that
    asks for catalog offers itself is refused in one line."""
    hw = raw.get("hardware") if isinstance(raw, dict) else None
    if not isinstance(hw, dict):
        return raw  # the schema names what is missing
    if "price_catalog" in hw:
        raise InputError(f"{name}: jobs.{i}.instance.hardware.price_catalog: a portfolio job is priced by the "
                         "portfolio's gpus entries; give the price file as the portfolio's price_catalog")
    if hw.get("offers", "reference") != "reference":
        raise InputError(f"{name}: jobs.{i}.instance.hardware.offers: a portfolio job is priced by the portfolio's "
                         "gpus entries (its offers); remove the field")
    # the tiers a job runs on are the portfolio's pools (reserved, on-demand, spot) and its spot preemptions the
    # portfolio's gpus[].spot_preemptions_per_gpu_hour: a job's own would be dropped, so they are refused
    if hw.get("pricing", "on_demand") != "on_demand":
        raise InputError(f"{name}: jobs.{i}.instance.hardware.pricing: a portfolio job runs on the portfolio's "
                         "reserved, on-demand and spot pools (the MIP chooses); remove the field")
    tiered = next((n for n, g in enumerate(hw.get("gpus") or []) if isinstance(g, dict) and "tier" in g), None)
    if tiered is not None:
        raise InputError(f"{name}: jobs.{i}.instance.hardware.gpus.{tiered}.tier: a portfolio job runs on the "
                         "portfolio's pools (the MIP chooses the tier); remove the field")
    rel = raw.get("reliability")
    if isinstance(rel, dict) and "spot_reclaimed_share_per_month" in rel:
        raise InputError(f"{name}: jobs.{i}.instance.reliability.spot_reclaimed_share_per_month: a portfolio's spot "
                         "preemptions are its gpus' spot_preemptions_per_gpu_hour; set them there")
    return {**raw, "hardware": {**hw, "offers": "reference"}}


def _refuse_pools(inst, name: str, i: int) -> None:
    """Refuse a choice of environment pool (as a choice of trainer), and a pool whose money per training hour is
    not the one rate the portfolio prices a job's spot re-work at (``portfolio.hourly_noncompute_usd``): a
    cpu_sandbox pool held by the on-policy choices of a job that also offers SFT, which holds none."""
    pools = inst.environments.pools
    if len(pools) > 1:
        raise InputError(f"{name}: jobs.{i}.instance.environments.pools: a choice of environment pool is not yet "
                         "planned in portfolios (a job's columns are one hardware choice per GPU type and count); "
                         "give the job the one pool it runs on")
    if pools and pools[0].kind == "cpu_sandbox" and "sft" in inst.training.methods \
            and pools[0].workers * pools[0].usd_per_worker_hour + pools[0].usd_per_hour > 0:
        raise InputError(f"{name}: jobs.{i}.instance.environments.pools.0: a portfolio prices a job's money per training "
                         "hour as one rate, and this pool is held by the job's on-policy plans but not by its SFT "
                         "ones; give SFT and the on-policy methods jobs of their own")


def refuse_unplanned_layers(inst, portfolio: Portfolio, name: str, i: int) -> None:
    """Refuse, in one line naming ``jobs.i.instance.<field>``, a job using a layer the portfolio does not plan
    (retention, a trained teacher, candidate students, stages, a choice of trainer, separate rollout GPUs, offers
    in the job) or sharing no GPU type with the portfolio."""
    if inst.releases is not None:  # a portfolio schedules one run of each job on its pools
        raise InputError(f"{name}: jobs.{i}.instance.releases: repeated releases are not yet planned in portfolios "
                         "(a portfolio schedules one run of each job); remove the block")
    if inst.retention is not None:
        raise InputError(f"{name}: jobs.{i}.instance.retention: retention choices are not yet combined with "
                         "portfolios; remove the block (checkpointing.keep_last applies)")
    if inst.teacher is not None and inst.teacher.training is not None:  # its GPUs would be priced outside the pool
        raise InputError(f"{name}: jobs.{i}.instance.teacher.training: a teacher trained as a stage is not modelled "
                         "in portfolios; give the teacher as a lump (teacher.training_usd, teacher.training_hours)")
    if inst.candidate_students:  # each student's hardware and work would be a job block of its own
        raise InputError(f"{name}: jobs.{i}.instance.candidate_students: a choice of student is not yet planned in "
                         "portfolios; give the job the student it trains (one job per candidate compares them)")
    if inst.training.staged:  # a stage holds its own GPUs; the portfolio's gang holds one count per job
        raise InputError(f"{name}: jobs.{i}.instance.training.stage_sequences: staged recipes are not yet "
                         "planned in portfolios (each stage holds GPUs of its own); give the job one-stage sequences")
    if len(inst.training.trainer_keys()) > 1:  # a job's gang and its columns are one choice per (GPU type, count)
        raise InputError(f"{name}: jobs.{i}.instance.training.trainer_options: a choice of trainer is not yet "
                         "planned in portfolios (a job's columns are one hardware choice per GPU type and count); "
                         "give the job the trainer it runs (training.trainer)")
    if len(inst.training.context_parallel_degrees()) > 1:  # as a choice of trainer: one column per (type, count)
        raise InputError(f"{name}: jobs.{i}.instance.training.context_parallel: a choice of context-parallel degree "
                         "is not yet planned in portfolios; give the job the one degree it runs")
    _refuse_pools(inst, name, i)
    if inst.hardware.rollout_gpus:  # a portfolio counts GPU-hours by the training GPUs' type alone
        raise InputError(f"{name}: jobs.{i}.instance.hardware.rollout_gpus: separate rollout hardware is not "
                         "modelled in portfolios; expected none (generation on the job's own GPUs)")
    offered = next((k for k, o in enumerate(inst.hardware.gpus) if o.offer is not None or o.provider is not None), None)
    if offered is not None:  # the portfolio's gpus are the offers; a job names GPU types
        what = "provider" if inst.hardware.gpus[offered].provider is not None else "offer"
        raise InputError(f"{name}: jobs.{i}.instance.hardware.gpus.{offered}.{what}: a portfolio job lists GPU types; "
                         "the offers are the portfolio's gpus entries (one per provider and region)")
    if not shared_gpu_types(inst, portfolio):
        raise InputError(f"{name}: jobs.{i}.instance.hardware.gpus: expected at least one of the portfolio's GPU types "
                         f"({', '.join(g.name for g in portfolio.gpus)}), got {', '.join(o.name for o in inst.hardware.gpus)}")


def check_spot_preemptions(portfolio: Portfolio, instances: list, name: str) -> None:
    """Refuse, naming ``gpus.N.spot_preemptions_per_gpu_hour``, a preemption rate under which the smallest gang of
    the type that a job may run fails before it has restarted (``cost/consistency.check_failure_rates``' rule with
    preemptions added to the failures): no spot plan would make progress."""
    for n, gpu in enumerate(portfolio.gpus):
        spot = gpu.spot_available_gpus if isinstance(gpu.spot_available_gpus, list) else [gpu.spot_available_gpus]
        if not any(spot) or not gpu.spot_preemptions_per_gpu_hour:
            continue
        counts = [c for inst in instances for o in inst.hardware.gpus if o.name == gpu.name for c in o.counts]
        smallest = min(counts, default=1)
        worst = max((inst.reliability for inst in instances), key=lambda r: r.failures_per_gpu_hour, default=None)
        if worst is None:
            continue
        rate = worst.failures_per_gpu_hour + gpu.spot_preemptions_per_gpu_hour
        if smallest * rate * worst.restart_minutes / 60.0 >= 1.0:
            raise InputError(f"{name}: gpus.{n}.spot_preemptions_per_gpu_hour: {gpu.spot_preemptions_per_gpu_hour:g} per "
                             f"GPU-hour is a preemption every {3600.0 / (smallest * rate):.3g} s on the smallest gang "
                             f"({smallest} GPUs), sooner than its {worst.restart_minutes:g}-minute restart, so no spot "
                             f"plan would make progress")


# The portfolio model's memory (``portfolio_memory``), measured by benchmarks/portfolio_memory.py
# (BENCHMARKS.md, "Portfolio model memory"; 2026-12-02, generated portfolios of 25-100 jobs × 14 GPU types
# × 26-520 buckets, seed 1, each in its own process): the resident memory that building the Pyomo model
# (``PortfolioModel``) and handing it to HiGHS (``set_instance``) add was 27.0-32.7 kB per schedule key
# (job, bucket, GPU type, tier of ``m.U``; 3,288-14,042 keys, 103-384 MiB, ~8.5 variables and ~46
# nonzeros a key). Everything else of the model (the jobs' own blocks, the capacity rows) grows with
# the keys on these portfolios, so the one figure carries it. The jobs' plan arrays
# (``lagrange.job_plans``: [pairs, buckets, 3] per job, over every bucket of the horizon, not the job's
# window) and the largest job's pricing temporaries ([recipes, pairs, buckets] arrays of
# ``job_minimum``) are counted from their shapes (upper bounds: every recipe and pair of
# ``plan_space``). The resident memory before the build (imports, the loaded portfolio) was 136 MiB.
# Not counted: HiGHS's own search (presolve copies, the branch-and-bound tree) during the solve.
BYTES_PER_SCHEDULE_KEY = 34_000        # rounded up from the largest measured, 32.7 kB
PORTFOLIO_BASE_MIB = 150               # rounded up from the 136 MiB measured before the build
PLAN_BYTES_PER_PAIR_BUCKET = 3 * 9     # tier_ok (bool) and hour_usd (float64), 3 tiers
PLAN_BYTES_PER_RECIPE_BUCKET = 2       # allowed, allowed_strict (bool)
PLAN_BYTES_PER_RECIPE_PAIR = 3 * 8     # compute_hours, fixed_usd, work_gpu_hours (float64)
PRICING_BYTES_PER_RECIPE_PAIR_BUCKET = 12 * 8   # job_minimum's [R, P, B] and [R, P, B, 3] temporaries, one job at a time
# Seconds to build the portfolio's model and hand it to HiGHS, per schedule key (``portfolio_memory``'s count),
# measured by benchmarks/portfolio_build_time.py (2026-12-03, through the array hand-over; generated portfolios of
# 20, 40 and 80 jobs × 10 GPU types × 26 buckets, seed 7: 591, 551 and 497 µs per key). The largest: a solve whose
# time limit leaves less than this times its keys is stopped before the build (no schedule could come in time).
BUILD_SECONDS_PER_SCHEDULE_KEY = 600e-6
# The refusal: a model estimated above this is not built. 16 GiB leaves a 32-GiB machine as much again for
# HiGHS's search; 1,000 generated jobs × 14 GPU types × 520 buckets are estimated at 8,134 MiB (seed 1).
MAX_PORTFOLIO_MIB = 16 * 1024


@dataclass(frozen=True)
class PortfolioMemory:
    """The estimated memory of a portfolio's model (``portfolio_memory``), in its parts."""
    keys: int            # schedule keys (job, bucket, GPU type, tier): the model's size
    plan_bytes: int      # every job's plan arrays
    pricing_bytes: int   # the largest job's pricing temporaries

    @property
    def total_mib(self) -> float:
        """The estimate, MiB."""
        return PORTFOLIO_BASE_MIB + (self.keys * BYTES_PER_SCHEDULE_KEY + self.plan_bytes + self.pricing_bytes) / 2**20

    def describe(self) -> str:
        """The arithmetic, for people."""
        return (f"{self.total_mib:,.0f} MiB ({self.keys:,} schedule variables × {BYTES_PER_SCHEDULE_KEY / 1000:g} kB, "
                f"{self.plan_bytes / 2**20:,.0f} MiB of job plan arrays, {self.pricing_bytes / 2**20:,.0f} MiB of pricing "
                f"temporaries, {PORTFOLIO_BASE_MIB} MiB base)")


def portfolio_memory(data: PortfolioData) -> PortfolioMemory:
    """The memory estimate of ``data``'s model, from counts alone (nothing is built): its schedule
    keys as ``define_schedule`` makes them (spot wherever some is available: an upper bound) and
    each job's plan arrays by their shapes (recipes and hardware × intervals of ``plan_space``)."""
    from planopt.job.plan_space import plan_space
    B = len(data.buckets)
    keys = plan_bytes = pricing = 0
    for j, inst in enumerate(data.instances):
        names = {o.name for o in inst.hardware.gpus}
        types = [g for g in data.gpus if data.gpu_type[g] in names]
        for b in data.window(j):
            for g in types:
                keys += (b >= data.reserved_from[g]) + (data.od_avail[g][b] > 0) + (data.spot_avail[g][b] > 0)
        space = plan_space(inst)
        R, P = space.recipes, space.hardware * space.intervals
        plan_bytes += P * B * PLAN_BYTES_PER_PAIR_BUCKET + R * B * PLAN_BYTES_PER_RECIPE_BUCKET + R * P * PLAN_BYTES_PER_RECIPE_PAIR
        pricing = max(pricing, R * P * B * PRICING_BYTES_PER_RECIPE_PAIR_BUCKET)
    return PortfolioMemory(keys, plan_bytes, pricing)


def check_portfolio_size(data: PortfolioData) -> None:
    """Refuse, before any model is built, a portfolio whose model is estimated above
    ``MAX_PORTFOLIO_MIB`` (``portfolio_memory``: the estimate and the limit in one line), or a job
    whose own model is over the single-job cap (``plan_space.check_model_size``), naming the job and
    the option that blows it up (issue 13 item 26)."""
    from planopt.job.plan_space import check_model_size
    for name, inst in zip(data.names, data.instances):
        try:
            check_model_size(inst)
        except InputError as exc:
            raise InputError(f"job {name!r}: {exc}") from None
    memory = portfolio_memory(data)
    if memory.total_mib > MAX_PORTFOLIO_MIB:
        raise InputError(f"portfolio model: estimated {memory.describe()}, over the {MAX_PORTFOLIO_MIB:,} MiB limit; "
                         "split it into portfolios that share no GPUs, or shorten its horizon or the jobs' windows")


def check_portfolio(data) -> int:
    """The plans over a loaded portfolio's jobs when ``solve`` would start on it; else the InputError it raises
    (``loading.check_portfolio_size``: the job count, each job's model size, naming the job)."""
    from planopt.job.plan_space import plan_space
    check_portfolio_size(data)
    return sum(plan_space(inst).plans for inst in data.instances)
