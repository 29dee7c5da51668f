r"""The size of an instance's plan space and of its MIP, counted from the options without building anything.

A plan is a recipe, a hardware choice and a checkpoint interval, so

.. math::
   |\mathrm{plans}| = R \cdot H \cdot I, \qquad
   R = A \sum_{m} |\mathrm{steps}_m| \cdot
       \begin{cases} |\mathrm{mixes}| \cdot |\mathrm{epochs}| & m = \mathrm{sft} \\
                     S \cdot |\mathrm{staleness}| & m = \mathrm{rl} \\
                     S \cdot |\mathrm{precisions}| \cdot |\mathrm{staleness}|^{[\mathrm{async\ OPD}]} & m = \mathrm{opd} \end{cases}, \qquad
   S = \begin{cases} \binom{k + p - 1}{p} & \text{taper only (non-increasing schedules)} \\
                     k^{p} & \text{otherwise} \end{cases}

with :math:`k` samples-per-prompt options over :math:`p` phases, :math:`A` the
adapters (full weights and/or each LoRA rank), :math:`H` the (GPU type, count,
adapter) triples within availability and with a price (:math:`A` per pair), each
also with every separate rollout (GPU type, count) of ``hardware.rollout_gpus``
(:math:`H = A \cdot K \cdot G (1 + G_r)` for :math:`G` training and :math:`G_r` rollout
choices and :math:`K` trainers of ``training.trainer_options``, less the pairs of two vendors or of one type whose sum is over its availability;
with ``environments.pools`` each once per pool, and once without one when SFT is a method: :math:`P + [\mathrm{sft}]`),
:math:`I` the checkpoint intervals. With a teacher trained as a stage (``teacher.training``) each OPD
recipe is offered once per teacher plan of the (cost, wall) Pareto set (``teacher_training.py``). These are the counts of ``recipes.enumerate_recipes`` and
``hardware.hardware_options`` (``tests/solver/job/test_plan_space.py`` holds them equal),
computed in microseconds even when the lists would not fit in memory.

The MIP never lists plans: it has one binary per recipe and per hardware
choice, and per-hardware work and interval variables. Its memory is estimated as

.. math::
   M \approx M_0 + R \cdot m_R + H \cdot m_H + R \cdot H \cdot m_{RH}

(coefficients below, measured) and ``solve`` refuses, before building anything,
an instance whose estimate is over :data:`MAX_MODEL_MIB`, naming the option
whose reduction to one value would shrink the model most.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from planopt.models.cost.hardware import price_usd_per_gpu_hour
from planopt.models.schema.instance import Instance
from planopt.models.cost.retention import retention_options

from planopt.errors import InputError

# Memory of the built and solved model: peak RSS of `planopt solve FILE --no-sensitivity` on edits of
# qwen3-8b-math.json, BENCHMARKS.md §1 "Model memory by plan-space size" (benchmarks/model_memory.py,
# 2026-11-30, two runs): 1,000 and 4,000 counts of one GPU type cost 85-95 KiB per hardware choice above the
# instance as shipped; 5 and 6 phases of 4 samples-per-prompt options without taper_only (16,393 and 65,545
# recipes) 3.8-4.1 KiB per recipe; the fit of §1's scale ladder (bench_scale.py, 10^6-10^8 plans) leaves about
# 14 bytes per recipe × hardware pair (the [recipe, hardware] coefficient arrays of formulation/data.py).
BASELINE_MIB = 74                # `planopt solve qwen3-8b-math.json --no-sensitivity`: imports, instance, small model
MODEL_KIB_PER_RECIPE = 4.5       # rounded up from 3.8-4.1
MODEL_KIB_PER_HARDWARE = 95      # the largest of 85-95
MODEL_BYTES_PER_PAIR = 14
# A staged model (formulation/staged.py) holds one pair variable per allowed (first-stage recipe, second-stage
# option): peak RSS of building the model of qwen3-32b-sft-then-rl.json with 2, 5 and 8 SFT step options
# (1,572, 9,558 and 25,893 pairs) grew by 33.1 MiB over 24,321 pairs, 1.39 KiB each (2026-12-01, by hand,
# `resource.getrusage` after `PlanModel(inst)`); rounded up. Each stage slot also holds its recipes again.
MODEL_KIB_PER_STAGE_PAIR = 1.5
# The cap: 2.5× the largest model benchmarked (204 MiB at 10^8 plans, BENCHMARKS.md §1). Near it a solve
# already takes about a minute on the benchmark machine (4,000 GPU counts: 33-44 s, 411 MiB, without the
# sensitivity re-solves); beyond it the build alone runs for minutes, so the user hears why up front.
MAX_MODEL_MIB = 512
# Time of building the model (``PlanModel(inst)``, before any solve): on the shared 2-core test machine
# (2026-12-02, by hand, /tmp scripts not shipped) 6 phases of 3 and 4 options and 7 of 3 without taper_only
# (11,673, 65,545 and 35,001 recipes × 18 hardware) built in 2.28, 12.23 and 6.57 s: 0.19-0.20 ms per recipe;
# 1,014 hardware choices of 169 recipes in 0.87 s: 0.86 ms per hardware choice; 31 candidate students of
# 169 recipes in 1.09 s (0.2 ms per recipe again); qwen3-32b-sft-then-rl's 6,654 stage pairs 0.28 s. A
# time limit is refused before building only when half this estimate (a machine twice as fast) is over it.
BUILD_MS_PER_RECIPE = 0.2
BUILD_MS_PER_HARDWARE = 0.86
BUILD_MS_PER_STAGE_PAIR = 0.03
BUILD_SPEEDUP = 2.0   # the fastest machine assumed: the refusal is for a build that clearly cannot fit
# With a confidence the scenario layer adds rows per scenario (formulation/scenarios.py). Re-measured after the
# array hand-over and the list-kept rows (issue 29; 2026-12-02, 18:33 UTC, under a CI run's load;
# `benchmarks/chance_setup.py` measures it): ChanceModel of 200 scenarios built in 0.26, 1.32 and 1.88 s, and its first HiGHS run limited to 0.01 s
# (the hand-over and HiGHS's set-up, which does not check the clock) took 0.15, 1.67 and 2.99 s, on qwen3-8b-math
# (2,704 recipe × hardware pairs), the split-rollout job with staleness (20,520) and qwen3-32b-sft-then-rl (10,584
# and 6,654 stage pairs): 0.73-0.76 µs per pair per scenario, 2.4 µs per stage pair, build and first run together;
# rounded up to 1.0 and 3.0 (before: 2.0 and 9.5, through Pyomo's persistent interface). The script's run on an
# idle machine (19:52 UTC) gave 0.43 µs per pair and 1.4 µs per stage pair: the constants stay on the loaded side.
SCENARIO_US_PER_PAIR = 1.0
SCENARIO_US_PER_STAGE_PAIR = 3.0


@dataclass(frozen=True)
class PlanSpace:
    """Counts of an instance's options, and what each option multiplies in."""

    recipes: int
    hardware: int
    intervals: int
    # option (a field path) -> the number of values it offers
    options: dict[str, int] = field(default_factory=dict)
    # option -> estimated model MiB if it offered a single value
    model_mib_without: dict[str, float] = field(default_factory=dict)
    stage_pairs: int = 0        # a staged model's (first-stage recipe, second-stage option) pairs
    other_students_mib: float = 0.0   # with candidate_students: the other students' blocks
    retention: int = 1          # retention options (keep_last × tiers of a ``retention`` block; 1 without one)
    other_students_seconds: float = 0.0   # with candidate_students: the other students' blocks' build time
    # option -> estimated build seconds if it offered a single value
    seconds_without: dict[str, float] = field(default_factory=dict)

    @property
    def plans(self) -> int:
        """The number of plans: recipes × hardware × intervals × retention options."""
        return self.recipes * self.hardware * self.intervals * self.retention

    @property
    def model_mib(self) -> float:
        """The estimated MiB of building and solving the MIP (with the other students' blocks)."""
        return model_mib(self.recipes, self.hardware, self.stage_pairs) + self.other_students_mib

    @property
    def build_seconds(self) -> float:
        """The estimated seconds of building the MIP on the benchmark machine (with the other students' blocks)."""
        return build_seconds(self.recipes, self.hardware, self.stage_pairs) + self.other_students_seconds

    @property
    def dominant(self) -> str | None:
        """The option whose reduction to one value shrinks the estimated model most (None: no option has two)."""
        candidates = {k: v for k, v in self.model_mib_without.items() if self.options.get(k, 1) > 1}
        return min(candidates, key=candidates.get) if candidates else None

    def describe(self) -> str:
        """The arithmetic, for people: ``R recipes × H hardware options × I intervals = N plans``."""
        if self.stage_pairs:
            return (f"{self.recipes:,} stage recipes over the stage slots, {self.hardware:,} hardware options per stage, "
                    f"{self.stage_pairs:,} pairs of first and second stages")
        retention = f" × {self.retention:,} retention options" if self.retention > 1 else ""
        students = self.options.get("candidate_students")
        return (f"{self.recipes:,} recipes × {self.hardware:,} hardware options × {self.intervals:,} "
                f"checkpoint intervals{retention} = {self.plans:,} plans" + (f" for each of {students} students" if students else ""))


def model_mib(recipes: int, hardware: int, stage_pairs: int = 0) -> float:
    """Estimated peak memory of building and solving the MIP, MiB (module docstring; a staged model's pairs too)."""
    return (BASELINE_MIB + recipes * MODEL_KIB_PER_RECIPE / 1024 + hardware * MODEL_KIB_PER_HARDWARE / 1024
            + recipes * hardware * MODEL_BYTES_PER_PAIR / 2**20 + stage_pairs * MODEL_KIB_PER_STAGE_PAIR / 1024)


def build_seconds(recipes: int, hardware: int, stage_pairs: int = 0) -> float:
    """Estimated seconds of building the MIP (``BUILD_MS_PER_*``, measured)."""
    return (recipes * BUILD_MS_PER_RECIPE + hardware * BUILD_MS_PER_HARDWARE + stage_pairs * BUILD_MS_PER_STAGE_PAIR) / 1000


def schedule_count(options: int, phases: int, taper_only: bool) -> int:
    """Sampling schedules: non-increasing sequences of ``phases`` values from ``options`` (multisets), or all."""
    return math.comb(options + phases - 1, phases) if taper_only else options ** phases


def _option_counts(inst: Instance) -> dict[str, int]:
    """Every option list that multiplies the space, with its number of distinct usable values."""
    t = inst.training
    counts: dict[str, int] = {f"training.methods.{m}.steps_options": len(set(o.steps_options)) for m, o in t.methods.items()}
    if any(m != "sft" for m in t.methods):
        counts["training.samples_per_prompt_options"] = len(set(t.samples_per_prompt_options))
        counts["training.phases"] = t.phases
    if "opd" in t.methods:
        counts["teacher.precision_options"] = len(set(inst.teacher.precision_options))
        if inst.teacher.precision_by_phase:  # two values: a precision per phase (true) or one for the run (false)
            counts["teacher.precision_by_phase"] = 2
        if inst.teacher.training is not None:  # each OPD recipe once per Pareto teacher plan (teacher_training.py)
            from planopt.models.cost.evaluator import Evaluator
            from planopt.models.cost.teacher_training import teacher_plans
            counts["teacher.training"] = len(teacher_plans(inst, Evaluator))
    if "rl" in t.methods:
        counts["training.staleness_steps_options"] = len(set(t.staleness_steps_options))
    if "opd" in t.methods and t.asynchronous_opd:  # OPD's recipes once per staleness too (asynchronous.py)
        counts["training.asynchronous_opd"] = len(set(t.staleness_steps_options))
    if t.trainer_options is not None:  # each hardware choice once per trainer (cost/trainer.py)
        counts["training.trainer_options"] = len(t.trainer_keys())
    if len(t.context_parallel_degrees()) > 1:  # each hardware choice once per degree dividing its count (context.py)
        counts["training.context_parallel"] = len(t.context_parallel_degrees())
    if inst.environments.pools:  # each hardware choice once per pool of environment workers (environments.py)
        counts["environments.pools"] = len(inst.environments.pools)
    if inst.continued_pretraining is not None:  # each full-weight first-stage recipe once per token count (pretraining.py)
        counts["continued_pretraining.tokens_options"] = len(set(inst.continued_pretraining.tokens_options))
    counts["training.adapter_options"] = len(set(t.adapter_options))
    if "lora" in t.adapter_options:
        counts["training.lora_rank_options"] = len(set(t.lora_rank_options))
    if "sft" in t.methods:
        counts["sft_data.external_data_share_options"] = len(set(inst.sft_data.external_data_share_options))
        counts["sft_data.max_epochs_options"] = len(set(inst.sft_data.max_epochs_options))
    for n, option in enumerate(inst.hardware.gpus):
        counts[f"hardware.gpus.{n}.counts"] = _usable_counts(inst, option)
    for n, option in enumerate(inst.hardware.rollout_gpus):
        counts[f"hardware.rollout_gpus.{n}.counts"] = _usable_counts(inst, option)
    counts["checkpointing.interval_minutes_options"] = len(set(inst.checkpointing.interval_minutes_options))
    return counts


def _usable_counts(inst: Instance, option) -> int:
    """An entry's counts within its availability and with a price (a count no offer holds is left out)."""
    return sum(1 for c in set(option.counts) if price_usd_per_gpu_hour(inst, option, c) is not None
               and (option.available_gpus is None or c <= option.available_gpus))


def _pairs_not_allowed(inst: Instance) -> int:
    """(training, rollout) choices that may not pair: of two vendors, or of one GPU type on both sides
    whose sum exceeds the training entry's ``available_gpus`` (``rollout.pair_allowed`` leaves them out)."""
    from planopt.models.cost.rollout import pair_allowed, rollout_choices
    rollouts = rollout_choices(inst, price_usd_per_gpu_hour)
    out = 0
    for o in inst.hardware.gpus:
        for n in set(o.counts):
            if price_usd_per_gpu_hour(inst, o, n) is not None and (o.available_gpus is None or n <= o.available_gpus):
                out += sum(not pair_allowed(inst, o.key, n, g, k) for g, k in rollouts)
    return out


def _sizes(inst: Instance, counts: dict[str, int], exact: bool = True) -> tuple[int, int, int, int]:
    """(recipes the model holds, hardware choices, intervals, stage pairs): the methods of one-stage sequences
    (``recipes.enumerate_recipes``); a staged model holds each slot's recipes and its pairs (``formulation/space.py``)."""
    t = inst.training
    schedules = (schedule_count(counts["training.samples_per_prompt_options"], counts["training.phases"], t.taper_only)
                 if "training.phases" in counts else 0)
    adapters = _adapters(inst, counts)
    per_method = {}
    for m in t.methods:
        steps = counts[f"training.methods.{m}.steps_options"]
        if m == "sft":
            per_method[m] = steps * counts["sft_data.external_data_share_options"] * counts["sft_data.max_epochs_options"]
        elif m == "rl":
            per_method[m] = steps * schedules * counts["training.staleness_steps_options"]
        else:
            precisions = counts["teacher.precision_options"]
            if counts.get("teacher.precision_by_phase", 1) > 1:  # every sequence of precisions over the phases
                precisions **= counts["training.phases"]
            per_method[m] = (steps * schedules * precisions * counts.get("teacher.training", 1)
                             * counts.get("training.asynchronous_opd", 1))
        per_method[m] *= adapters
    sequences = t.sequences()
    slots = [{q[s] for q in sequences if len(q) > s} for s in range(max(len(q) for q in sequences))]
    first = {m: round(v * _pretraining_factor(inst, counts, adapters)) for m, v in per_method.items()}  # slot 0's recipes
    recipes = sum((first if s == 0 else per_method)[m] for s, methods in enumerate(slots) for m in methods)
    follows = {(q[0], q[1] if len(q) > 1 else None) for q in sequences} if len(slots) > 1 else set()
    pairs = sum(first[a] * (1 if b is None else per_method[b]) for a, b in follows)
    # each training choice colocated, and with each separate rollout choice (``rollout.py``); ``exact``: less the
    # pairs that may not pair (two vendors, or over a shared type's availability; the what-if sizes skip it)
    training = sum(v for k, v in counts.items() if k.startswith("hardware.gpus."))
    rollouts = sum(v for k, v in counts.items() if k.startswith("hardware.rollout_gpus."))
    hardware = training * (1 + rollouts) - (_pairs_not_allowed(inst) if exact and rollouts else 0)
    # each once per context-parallel degree that divides its GPU count (``context.degrees_for``; ``exact``: less the
    # degrees that do not divide it)
    if t.context_parallel_degrees() != [1]:
        hardware = hardware * counts.get("training.context_parallel", 1) - (_degrees_not_offered(inst) if exact else 0)
    trainers = counts.get("training.trainer_options", 1)
    # each once per pool an on-policy stage may name, and once without one for SFT (``environments.pools_of``)
    pools = counts["environments.pools"] + ("sft" in t.methods) if "environments.pools" in counts else 1
    return recipes, hardware * adapters * trainers * pools, counts["checkpointing.interval_minutes_options"], pairs


def _degrees_not_offered(inst: Instance) -> int:
    """(training choice, context-parallel degree) pairs left out because the degree does not divide the count,
    each with every rollout set that choice pairs with."""
    from planopt.models.cost.rollout import pair_allowed, rollout_choices
    rollouts = rollout_choices(inst, price_usd_per_gpu_hour)
    degrees = inst.training.context_parallel_degrees()
    out = 0
    for o in inst.hardware.gpus:
        for n in set(o.counts):
            if price_usd_per_gpu_hour(inst, o, n) is not None and (o.available_gpus is None or n <= o.available_gpus):
                paired = 1 + sum(pair_allowed(inst, o.key, n, g, k) for g, k in rollouts)
                out += sum(n % c != 0 for c in degrees) * paired
    return out


def _pretraining_factor(inst: Instance, counts: dict[str, int], adapters: int) -> float:
    """How many times a first stage offers each recipe under ``continued_pretraining`` (``recipes.enumerate_recipes``):
    full weights once per token count, LoRA only without pre-training (when 0 is an option); 1 without the block."""
    n = counts.get("continued_pretraining.tokens_options")
    if n is None or not adapters:
        return 1.0
    full = int("full" in list(dict.fromkeys(inst.training.adapter_options))[:counts["training.adapter_options"]])
    zero = 0.0 in inst.continued_pretraining.tokens_options or n == 1
    return (full * n + (adapters - full) * zero) / adapters


def _adapters(inst: Instance, counts: dict[str, int]) -> int:
    """Adapters a plan may choose (``recipes.adapter_ranks``): full weights and/or each LoRA rank; both the
    recipes and the hardware choices are per adapter. One adapter option left: the first one the instance lists."""
    kinds = list(dict.fromkeys(inst.training.adapter_options))[:counts["training.adapter_options"]]
    return ("full" in kinds) + (counts.get("training.lora_rank_options", 0) if "lora" in kinds else 0)


def plan_space(inst: Instance) -> PlanSpace:
    """The instance's plan-space size, and the estimated model size with each option cut to one value."""
    if inst.candidate_students:  # one block per student: the sum of their models over one baseline
        spaces = [plan_space(inst.for_student(name)) for name in inst.student_names()]
        first = spaces[0]
        extra = sum(s.model_mib - BASELINE_MIB for s in spaces[1:])
        seconds = sum(s.build_seconds for s in spaces[1:])
        # the students themselves are an option: one of them alone is the first student's model
        options = {**first.options, "candidate_students": len(spaces)}
        # an option of the instance (GPU counts, steps, ...) is every student's: cutting it to one value cuts it in
        # every student's block (a student without that option keeps its whole block)
        keys = list(dict.fromkeys(k for sp in spaces for k in sp.model_mib_without))
        without = {k: sum(sp.model_mib_without.get(k, sp.model_mib) for sp in spaces) - BASELINE_MIB * (len(spaces) - 1)
                   for k in keys}
        without["candidate_students"] = first.model_mib
        seconds_without = {k: sum(sp.seconds_without.get(k, sp.build_seconds) for sp in spaces) for k in keys}
        seconds_without["candidate_students"] = first.build_seconds
        return PlanSpace(first.recipes, first.hardware, first.intervals, options, without, first.stage_pairs, extra,
                         other_students_seconds=seconds, seconds_without=seconds_without)
    counts = _option_counts(inst)
    recipes, hardware, intervals, pairs = _sizes(inst, counts)
    without, seconds = {}, {}
    for key, n in counts.items():
        if n > 1:
            r, h, _, p = _sizes(inst, {**counts, key: 1}, exact=False)
            without[key], seconds[key] = model_mib(r, h, p), build_seconds(r, h, p)
    # the retention one-hot adds a few rows per (hardware, interval) pair, not per recipe: left out of the memory estimate
    return PlanSpace(recipes, hardware, intervals, counts, without, pairs, retention=max(1, len(retention_options(inst))),
                     seconds_without=seconds)


def check_model_size(inst: Instance, cap_mib: float = MAX_MODEL_MIB) -> PlanSpace:
    """The plan space, if the model fits under ``cap_mib``; else an InputError naming the option that blows it up."""
    space = plan_space(inst)
    if space.model_mib <= cap_mib:
        return space
    key = space.dominant
    why = "" if key is None else (f"; most of it comes from {key} ({_what(inst, space, key)}): one value would bring it "
                                  f"to about {space.model_mib_without[key]:,.0f} MiB")
    raise InputError(f"{key or 'instance'}: {space.describe()}; the model would need about {space.model_mib:,.0f} MiB, "
                     f"over the cap of {cap_mib:,.0f} MiB{why}")


def _what(inst: Instance, space: PlanSpace, key: str) -> str:
    """What option ``key`` offers, in words: its count of values, or the sampling schedules of the phases."""
    if key in ("training.phases", "training.samples_per_prompt_options"):
        t = inst.training
        k = space.options["training.samples_per_prompt_options"]
        return (f"{k} samples_per_prompt_options over {t.phases} phases" + ("" if t.taper_only else " without taper_only")
                + f" give {schedule_count(k, t.phases, t.taper_only):,} sampling schedules")
    if key == "teacher.precision_by_phase":
        k, phases = space.options["teacher.precision_options"], inst.training.phases
        return f"{k} teacher.precision_options in each of {phases} phases give {k ** phases:,} precision sequences, not {k}"
    if key == "candidate_students":
        return f"{space.options[key]:,} students, the instance's and its candidate_students, each a model block of its own"
    return f"{space.options[key]:,} values"


def scenario_seconds(space: PlanSpace, scenarios: int) -> float:
    """Estimated seconds the scenario layer of ``scenarios`` scenarios adds to the build and the model's load into
    the solver (``SCENARIO_US_*``)."""
    return scenarios * (space.recipes * space.hardware * SCENARIO_US_PER_PAIR
                        + space.stage_pairs * SCENARIO_US_PER_STAGE_PAIR) / 1e6


def check_build_time(inst: Instance, space: PlanSpace, seconds_left: float | None, flag: str = "--time-limit",
                     scenarios: int = 0) -> None:
    """Refuse, before building, a model whose build clearly cannot fit in ``seconds_left`` (None: no limit): even
    ``BUILD_SPEEDUP`` times faster than measured it would take longer (with ``scenarios``, a chance-constrained
    model's layer included); the InputError names the option that makes it large and what one value would take."""
    extra = scenario_seconds(space, scenarios) if scenarios else 0.0
    if seconds_left is None or (space.build_seconds + extra) / BUILD_SPEEDUP <= seconds_left:
        return
    if extra > space.build_seconds:  # the scenarios make it large
        raise InputError(f"{flag}: the chance-constrained model of {space.describe()} over {scenarios:,} scenarios takes "
                         f"about {_seconds(space.build_seconds + extra)} to build and load into the solver (at least "
                         f"{_seconds((space.build_seconds + extra) / BUILD_SPEEDUP)} on a fast machine), more than the "
                         f"{_seconds(max(seconds_left, 0))} left of the limit; give more time or fewer --scenarios "
                         f"(each adds about {1000 * extra / scenarios:,.0f} ms)")
    candidates = {k: v for k, v in space.seconds_without.items() if space.options.get(k, 1) > 1}
    key = min(candidates, key=candidates.get) if candidates else None
    why = "" if key is None else (f"; most of it comes from {key} ({_what(inst, space, key)}): one value would build in "
                                  f"{_seconds(space.seconds_without[key])}")
    raise InputError(f"{flag}: {space.describe()}; building the model alone takes about {_seconds(space.build_seconds)} "
                     f"(at least {_seconds(space.build_seconds / BUILD_SPEEDUP)} on a fast machine), more than the "
                     f"{_seconds(max(seconds_left, 0))} left of the limit{why}; give more time or fewer options")


def _seconds(x: float) -> str:
    """Seconds in words for a refusal: ``12.3 s``, or ``under 0.1 s``."""
    return f"{x:,.1f} s" if x >= 0.1 else "under 0.1 s"
