r"""``planopt calibrate``: the cost model against published runs.

Every case (``*.json``, format in ``instances/calibration/FORMAT.md``, checked by the pydantic models of
``models/schema/calibration_case.py``, whose JSON Schema ``planopt schema --kind calibration`` prints) is turned into an :class:`Instance`,
:class:`Recipe` and :class:`HardwareChoice`, and its figure is read off the
**same** evaluator ``planopt solve`` uses (``Evaluator.recipe`` /
``Evaluator.hardware`` / ``Evaluator.metrics``, ``planopt.job.model.solve``). There
are no separate formulas and no per-case constants: what a case does not give
comes from ``models/catalog/defaults.py`` (or the schema's defaults, which are the
same), the same for every case.

How each kind is predicted:

``flops``
    the recipe profile's ``flops`` dict; student = ``student_generate`` (2N per
    generated or prefilled token) + ``student_train`` (6N per trained token),
    teacher = ``teacher`` (2N per scored token).
``step_seconds``
    one step (steps = 1, one phase) on the case's GPU and count: the sum over
    work components of amount × seconds per unit, without checkpoint or
    failure overhead.
``sft_hours``
    a one-recipe SFT job (examples × epochs examples in steps of the global
    batch) on the case's GPU and count, with its sequence length, packing,
    recomputation and offload; the sum over work components (6N/8N FLOPs of
    computed tokens, attention FLOPs at the sequence's context, FSDP collectives,
    host-link transfers under offload) of amount × seconds per unit, without
    checkpoint or failure overhead.
``interruptions``
    the hardware profile's job failure rate × hours.
``checkpoint_interval_minutes``
    ``planopt.job.model.solve`` on a synthetic job whose only pull on the interval is
    write overhead against lost work (reliability overridden so that the job
    MTBF, write time and restart are the case's), least wall time, every minute
    from 1 to 600 allowed; the interval the optimiser picks.
``forgetting_points``
    SFT forgetting at each external-data share, for a run long enough to
    saturate the forgetting curve.
``gpu_hours_ratio``
    per arm, the GPU-hours of the smallest training length (every integer
    step) whose quality reaches the target, on the default calibration
    workload and hardware (``defaults.CALIBRATION_*``); arm 0 over arm 1.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from planopt.models.catalog import defaults as d
from planopt.models.schema.calibration_case import TRAINING_KINDS, CaseError, CaseHeader, Trainer, check_case
from planopt.models.catalog import CatalogLookupError, find_gpu
from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.plan import HardwareChoice, Recipe
from planopt.models.schema.instance import Instance

from planopt.errors import InputError, read_json
from planopt.instance import instance_from

# Interval options of the synthetic checkpoint job: a geometric grid from 6
# seconds to 10 days in 0.5 % steps, so the optimiser's choice is within 0.25 %
# of the continuous optimum for any MTBF and write time a case may give.
INTERVAL_GRID_STEP = 1.005
INTERVAL_GRID_MINUTES = [round(0.1 * INTERVAL_GRID_STEP**i, 6) for i in range(int(math.log(14400 / 0.1, INTERVAL_GRID_STEP)) + 1)]
# A forgetting curve 1 - exp(-E/E0) is saturated to 1e-9 after 21 scales.
SATURATION_SCALES = 21.0
# Longest training searched for a gpu_hours_ratio arm (steps); beyond it the
# target counts as unreachable.
MAX_SEARCH_STEPS = 10**8
# Price, scores and prompt counts below do not enter the figure of the case
# they are used for; the schema needs a value.
UNUSED_PRICE_USD_PER_GPU_HOUR = 1.0
UNUSED_SCORE = 0.0
UNUSED_GENERAL_SCORE = 1.0


@dataclass(frozen=True)
class CalibrationRow:
    """One checked figure."""

    id: str
    figure: str
    predicted: float | None
    published: float | None     # None on the row of a case whose fields are bad, when its figure is not a number
    ratio: float | None
    passed: bool
    tolerance: float | None     # None likewise
    file: str
    # Why the figure could not be predicted: the case's fields are not what FORMAT.md
    # defines (a misspelled field, an unknown release, a missing figure: ``CaseReadError``),
    # or the case was read and its run cannot be priced (it does not fit); predicted and
    # ratio are then None.
    error: str | None = None
    # The trainer the case states and what it was priced as ("deepspeed ZeRO-3, llamafactory
    # (priced as DeepSpeed ZeRO-3)"), or "default"; None for a kind that does not train.
    trainer: str | None = None
    # Under CPU offload, the host link priced and where it came from ("64 GB/s per GPU,
    # one direction: the catalog's H100-SXM"); None without offload.
    host_link: str | None = None
    # P10 and P90 of the prediction under the uncertainty model, set by
    # ``calibration_intervals.with_intervals``; interval_state says how it was
    # found ("sampled", "fixed": inputs untouched, zero width, or "error": no
    # interval). interval_state None = intervals not computed (key omitted).
    interval: tuple[float, float] | None = None
    interval_state: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The row as ``planopt calibrate --json`` prints it (``error``, ``host_link`` and ``interval`` only where
        set)."""
        out = {"id": self.id, "figure": self.figure, "predicted": self.predicted, "published": self.published,
               "ratio": self.ratio, "passed": self.passed, "trainer": self.trainer}
        if self.error is not None:
            out["error"] = self.error
        if self.host_link is not None:
            out["host_link"] = self.host_link
        if self.interval_state is not None:
            out["interval"] = None if self.interval is None else [self.interval[0], self.interval[1]]
        return out

    def as_record(self) -> dict[str, Any]:
        """Every field, for a DataFrame."""
        return asdict(self)


class PredictionError(Exception):
    """A readable case whose figure cannot be predicted (its run does not fit the
    hardware as modelled, say): reported as a failed row, not as bad input."""


class CaseReadError(InputError):
    """A case file holding a JSON object whose fields are not what FORMAT.md defines. ``planopt calibrate DIR``
    makes it that case's error rows (the other cases still run); one case on its own (the service) is bad input."""

    def __init__(self, path: Path, data: dict[str, Any], problem: str):
        super().__init__(f"{path}: {problem}")
        self.path, self.data, self.problem = path, data, problem


def parse_case(path: Path, data: dict[str, Any]) -> CaseHeader:
    """The case checked against its schema (``models/schema/calibration_case.py``): the common fields first, then
    its kind's, so an error names the case's own field. :class:`CaseReadError` naming the file and fields
    otherwise."""
    try:
        return check_case(data)
    except CaseError as exc:
        raise CaseReadError(path, data, str(exc)) from None


class Case:
    """A calibration case: its file, its raw data and its checked form ``spec``."""

    def __init__(self, path: Path, data: dict[str, Any], transform: Callable[[Instance], Instance] | None = None):
        self.path, self.data = path, data
        self.spec: Any = parse_case(path, data)
        # Applied to every instance the case builds: a scenario of the uncertainty
        # model (``planopt calibrate`` intervals), identity otherwise.
        self.transform = transform

    def fail(self, field: str, problem: str) -> InputError:
        """An InputError naming the case's file and ``field``, saying ``problem``."""
        return InputError(f"{self.path}: {field}: {problem}")

    def instance(self, raw: dict[str, Any]) -> Instance:
        """The job ``raw`` describes, checked as an instance, without validation runs and through the case's
        transform."""
        # published step times and hours exclude validation runs: none in the instance either
        raw = {"evaluation": {"every_steps": None}, **raw}
        inst = instance_from(raw, f"{self.path} (as an instance)")  # its shape, then its consistency checks
        return inst if self.transform is None else self.transform(inst)


def load_case(path: Path) -> Case:
    """The case in the file at ``path``, checked against its schema."""
    return Case(Path(path), read_json(path))


# --- building blocks -----------------------------------------------------------

def gpu_option(case: Case, count: int) -> dict[str, Any]:
    """The case's GPU as an instance option. Its spec fields are the case's; a
    name the catalog knows fills only what the case does not give (links, node
    size, price), an unknown name takes those from ``defaults.CUSTOM_GPU_*``. Under CPU offload the host link
    is ``spec.host_link``: the case's, else the catalog's, else its PCIe generation's default."""
    gpu = case.spec.gpu
    opt: dict[str, Any] = {"name": gpu.name, "counts": [count], "bf16_tflops": gpu.bf16_tflops, "hbm_gb": gpu.hbm_gb,
                           "hbm_tbps": gpu.hbm_tbps}
    if gpu.fp8_tflops is not None:
        opt["fp8_tflops"] = gpu.fp8_tflops
    if case.spec.host_link is not None:  # under CPU offload: the case's figure, the catalog's, or its generation's
        opt["host_link_gb_per_s"] = case.spec.host_link[0]
    try:
        find_gpu(gpu.name)
    except CatalogLookupError:
        opt.update(intra_node_gb_per_s=d.CUSTOM_GPU_INTRA_NODE_GB_PER_S, inter_node_gb_per_s=d.CUSTOM_GPU_INTER_NODE_GB_PER_S,
                   gpus_per_node=d.CUSTOM_GPU_GPUS_PER_NODE, price_usd_per_gpu_hour=UNUSED_PRICE_USD_PER_GPU_HOUR)
    return opt


def _teacher(case: Case, score: float) -> dict[str, Any]:
    return {"architecture": case.spec.teacher.as_instance(), "score": score, "exists": True,
            "precision_options": [case.spec.teacher_precision]}


def _on_policy_instance(case: Case, method: str, steps: int, prompts: int, k: int, prompt_tokens: float,
                        response_tokens: float, max_response_tokens: float, gpu: dict[str, Any],
                        recompute: bool = True, reference: bool = True, offload: bool = False) -> Instance:
    raw: dict[str, Any] = {
        "name": case.spec.id, "student": case.spec.student.as_instance(),
        "task": {"baseline_score": UNUSED_SCORE, "general_score_baseline": UNUSED_GENERAL_SCORE,
                 "prompt_tokens": prompt_tokens, "response_tokens": response_tokens,
                 "max_response_tokens": max(max_response_tokens, response_tokens), "prompts_available": prompts},
        "training": {"methods": {method: {"steps_options": [steps], "prompts_per_step": prompts}}, "phases": 1,
                     "samples_per_prompt_options": [k], "activation_recompute": recompute, "reference_logprobs": reference,
                     "cpu_offload": offload},
        "hardware": {"gpus": [gpu]},
    }
    _with_trainer(case, raw)
    _with_long_context(case, raw)
    if method == "opd":
        raw["teacher"] = _teacher(case, UNUSED_SCORE)
    return case.instance(raw)


def _with_long_context(case: Case, raw: dict[str, Any]) -> None:
    """Put the case's context-parallel degree and eager decode (``workload.context_parallel``, ``cuda_graphs``)
    in the instance ``raw``."""
    w = getattr(case.spec, "workload", None)
    if getattr(w, "context_parallel", 1) != 1:
        raw["training"]["context_parallel"] = w.context_parallel
    if getattr(w, "cuda_graphs", True) is False:
        raw["efficiency"] = {"cuda_graphs": False}


def _degree(case: Case) -> int:
    """The case's context-parallel degree (1: none)."""
    return getattr(case.spec.workload, "context_parallel", 1)


def _with_trainer(case: Case, raw: dict[str, Any]) -> None:
    """Put the case's trainer (when it states a backend and its kind is priced by it) in the instance ``raw``."""
    stated = getattr(case.spec, "trainer", None)
    trainer = stated.as_instance() if stated is not None and case.spec.trainer_key is not None else None
    if trainer is not None:
        raw["training"]["trainer"] = trainer


def _recipe(inst: Instance, method: str, steps: int) -> Recipe:
    k = inst.training.samples_per_prompt_options[0]
    if method == "opd":
        return Recipe("opd", steps, (k,), inst.teacher.precision_options[0])
    return Recipe(method, steps, (k,))


def _notes(case: Case) -> dict[str, str | None]:
    """The row fields that say how the case was priced: its trainer, and its host link under offload."""
    link = case.spec.host_link
    return {"trainer": case.spec.trainer_note,
            "host_link": None if link is None else f"{link[0]:g} GB/s per GPU, one direction: {link[1]}"}


def _row(case: Case, figure: str, predicted: float | None, published: float) -> CalibrationRow:
    tol = case.spec.tolerance
    ratio = predicted / published if predicted is not None and math.isfinite(predicted) and published > 0 else None
    passed = ratio is not None and 1.0 / tol <= ratio <= tol
    return CalibrationRow(case.spec.id, figure, predicted if predicted is None or math.isfinite(predicted) else None,
                          published, ratio, passed, tol, str(case.path), **_notes(case))


# --- one predictor per kind ------------------------------------------------------

def predict_flops(case: Case) -> list[CalibrationRow]:
    """A flops case's rows: the student's (generation and training) and the teacher's FLOPs, each the case
    publishes."""
    spec, w = case.spec, case.spec.workload
    method = spec.run_method
    inst = _on_policy_instance(case, method, w.steps, w.prompts_per_step, w.samples_per_prompt, w.prompt_tokens,
                               w.response_tokens, w.response_tokens, {"name": "H100-SXM", "counts": [1]})
    flops = Evaluator(inst).recipe(_recipe(inst, method, w.steps)).flops
    predicted = {"student_flops": flops["student_generate"] + flops["student_train"], "teacher_flops": flops.get("teacher")}
    return [_row(case, key, predicted[key], published)
            for key, published in (("student_flops", spec.published.student_flops), ("teacher_flops", spec.published.teacher_flops))
            if published is not None]


def step_seconds(case: Case) -> tuple[float, dict[str, float]]:
    """Seconds of one step, and seconds by work component."""
    spec, w = case.spec, case.spec.workload
    method = spec.run_method
    count = spec.gpu_count
    gpu = gpu_option(case, count)
    inst = _on_policy_instance(case, method, 1, w.prompts_per_step, w.samples_per_prompt, w.prompt_tokens,
                               w.response_tokens, w.max_response_tokens, gpu, w.activation_recompute,
                               w.reference_logprobs, w.cpu_offload)
    # The RL release the run used: the optional ``software_release``, else the NeMo RL
    # tag its ``source`` cites ("... at tag v0.5.0"; the schema refuses one the project
    # does not know), else the default (the newest).
    release = spec.release
    if release is not None:
        inst = inst.model_copy(update={"efficiency": inst.efficiency.model_copy(update={"software_release": release})})
    ev = Evaluator(inst)
    r, h = _recipe(inst, method, 1), HardwareChoice(inst.hardware.gpus[0].name, count, trainer=spec.trainer_key,
                                                    context_parallel=_degree(case))
    memory, why = ev.hardware(h).memory_bytes_per_gpu(r.memory_class)
    if why is not None:
        raise PredictionError(f"the job does not fit on {count} x {spec.gpu.name}: {why}")
    by = {k: v * 3600.0 for k, v in ev.compute_hours_by_component(r, h).items()}
    return sum(by.values()), by


def predict_step_seconds(case: Case) -> list[CalibrationRow]:
    """A step case's row: the predicted seconds of one step against the published."""
    total, _ = step_seconds(case)
    return [_row(case, "step_seconds", total, case.spec.published.step_seconds)]


def sft_hours(case: Case) -> tuple[float, dict[str, float]]:
    """Wall hours of a whole SFT run, and hours by work component."""
    spec, w = case.spec, case.spec.workload
    count = spec.gpu_count
    gpu = gpu_option(case, count)
    # examples x epochs examples in optimiser steps of the global batch (the last step partial)
    total = w.examples * w.epochs
    steps = max(1, math.ceil(total / w.global_batch_examples))
    per_step = total / steps
    prompts = max(1, round(per_step))
    raw: dict[str, Any] = {
        "name": spec.id, "student": spec.student.as_instance(),
        "task": {"baseline_score": UNUSED_SCORE, "general_score_baseline": UNUSED_GENERAL_SCORE, "prompt_tokens": 0,
                 "response_tokens": 1, "max_response_tokens": 1, "prompts_available": 1},
        "training": {"methods": {"sft": {"steps_options": [steps], "prompts_per_step": prompts}},
                     "activation_recompute": w.activation_recompute, "cpu_offload": w.cpu_offload},
        "sft_data": {"examples_available": steps * prompts, "usd_per_labeled_example": 0, "labeled_examples_per_day": 1,
                     "example_tokens": w.tokens_per_example, "sequence_length_tokens": w.sequence_length,
                     "packing": w.packing, "truncation": w.truncation, "micro_batch_examples": w.micro_batch_examples},
        "hardware": {"gpus": [gpu]},
    }
    _with_trainer(case, raw)
    _with_long_context(case, raw)
    inst = case.instance(raw)
    ev = Evaluator(inst)
    r, h = Recipe("sft", steps, (), None, 1.0), HardwareChoice(inst.hardware.gpus[0].name, count, trainer=spec.trainer_key,
                                                               context_parallel=_degree(case))
    memory, why = ev.hardware(h).memory_bytes_per_gpu(r.memory_class)
    if why is not None:
        raise PredictionError(f"the job does not fit on {count} x {spec.gpu.name}: {why}")
    # rounding the examples per step to a whole number is undone exactly: hours are linear in examples
    scale = total / (steps * prompts)
    by = {k: v * scale for k, v in ev.compute_hours_by_component(r, h).items()}
    return sum(by.values()), by


def predict_sft_hours(case: Case) -> list[CalibrationRow]:
    """An SFT case's row: the predicted hours of the whole run against the published."""
    total, _ = sft_hours(case)
    return [_row(case, "hours", total, case.spec.published.hours)]


def _reliability_instance(case: Case, count: int, reliability: dict[str, float] | None = None,
                          intervals: list[float] | None = None, objective: str = "cost") -> Instance:
    """A one-recipe SFT job on ``count`` catalog GPUs (the default calibration GPU)."""
    raw: dict[str, Any] = {
        "name": case.spec.id, "student": {"preset": d.CALIBRATION_RELIABILITY_MODEL},
        "task": {"baseline_score": UNUSED_SCORE, "general_score_baseline": UNUSED_GENERAL_SCORE, "prompt_tokens": 0,
                 "response_tokens": 1, "max_response_tokens": 1, "prompts_available": 1},
        "training": {"methods": {"sft": {"steps_options": [d.CALIBRATION_RELIABILITY_STEPS], "prompts_per_step": d.CALIBRATION_PROMPTS_PER_STEP}}},
        "sft_data": {"examples_available": d.CALIBRATION_RELIABILITY_STEPS * d.CALIBRATION_PROMPTS_PER_STEP,
                     "usd_per_labeled_example": 0, "labeled_examples_per_day": 1,
                     "example_tokens": d.CALIBRATION_PROMPT_TOKENS + d.CALIBRATION_RESPONSE_TOKENS},
        "hardware": {"gpus": [{"name": d.CALIBRATION_GPU, "counts": [count]}]},
        "storage": {"hot_usd_per_gb_month": 0, "cold_usd_per_gb_month": 0},
        "objective": objective,
    }
    if reliability:
        raw["reliability"] = reliability
    if intervals:
        raw["checkpointing"] = {"interval_minutes_options": intervals, "keep_last": 1}
    return case.instance(raw)


def predict_interruptions(case: Case) -> list[CalibrationRow]:
    """An interruptions case's row: failures per hour of ``gpu_count`` GPUs times the run's hours."""
    count = case.spec.gpu_count
    inst = _reliability_instance(case, count)
    hp = Evaluator(inst).hardware(HardwareChoice(inst.hardware.gpus[0].name, count))
    predicted = hp.failures_per_hour * case.spec.hours
    return [_row(case, "interruptions", predicted, case.spec.published.interruptions)]


def predict_checkpoint_interval(case: Case) -> list[CalibrationRow]:
    """A checkpoint case's row: the interval the MIP picks for a least-time job with the case's failure rate, write
    time and restart time."""
    from planopt.job.model import solve
    spec = case.spec
    count = d.CALIBRATION_RELIABILITY_GPUS
    probe = _reliability_instance(case, count)
    hp = Evaluator(probe).hardware(HardwareChoice(probe.hardware.gpus[0].name, count))
    # write hours scale as 1 / bandwidth: pick the bandwidth that makes them the case's
    bandwidth = probe.reliability.checkpoint_write_gb_per_s_per_node * hp.checkpoint_write_hours * 3600.0 / spec.checkpoint_write_seconds
    reliability = {"failures_per_gpu_hour": 1.0 / (spec.job_mtbf_hours * count), "restart_minutes": spec.restart_seconds / 60.0,
                   "checkpoint_write_gb_per_s_per_node": bandwidth}
    inst = _reliability_instance(case, count, reliability, INTERVAL_GRID_MINUTES, objective="time")
    result = solve(inst)
    if result.plan is None:
        raise PredictionError(f"the synthetic checkpoint job has no plan ({result.status})")
    return [_row(case, "checkpoint_interval_minutes", result.plan.checkpoint_interval_minutes,
                 spec.published.checkpoint_interval_minutes)]


def predict_forgetting(case: Case) -> list[CalibrationRow]:
    """A forgetting case's rows: the forgetting of a saturating SFT run at each data mix."""
    spec = case.spec
    shares = [p.external_data_share for p in spec.points]
    prompts = d.CALIBRATION_PROMPTS_PER_STEP
    scale = Instance.model_fields["priors"].default.sft_forgetting_scale_samples
    steps = math.ceil(SATURATION_SCALES * scale / prompts)
    raw = {"name": spec.id, "student": spec.student.as_instance(),
           "task": {"baseline_score": UNUSED_SCORE, "general_score_baseline": spec.baseline_score,
                    "general_score_family": spec.general_score_family,
                    "prompt_tokens": 0, "response_tokens": 1, "max_response_tokens": 1, "prompts_available": 1},
           "training": {"methods": {"sft": {"steps_options": [steps], "prompts_per_step": prompts}}},
           "sft_data": {"examples_available": steps * prompts, "usd_per_labeled_example": 0, "labeled_examples_per_day": 1,
                        "example_tokens": d.CALIBRATION_PROMPT_TOKENS + d.CALIBRATION_RESPONSE_TOKENS,
                        "external_data_share_options": sorted(set(shares))},
           "hardware": {"gpus": [{"name": d.CALIBRATION_GPU, "counts": [d.CALIBRATION_GPUS]}]}}
    ev = Evaluator(case.instance(raw))
    return [_row(case, f"forgetting_points[{i}]", ev.recipe(Recipe("sft", steps, (), None, s)).forgetting_points, value)
            for i, (s, value) in enumerate(zip(shares, spec.published.forgetting_points))]


def arm_gpu_hours(case: Case, index: int) -> tuple[float | None, int | None]:
    """GPU-hours (and steps) of the shortest run of arm ``index`` that reaches its target, or (None, None)."""
    field = f"arms[{index}]"
    arm = case.spec.arms[index]
    method, start = arm.method, arm.start_score
    ceiling = d.CALIBRATION_SCORE_CEILING
    prompts = d.CALIBRATION_PROMPTS_PER_STEP
    k = d.CALIBRATION_SAMPLES_PER_PROMPT[method]
    seq = d.CALIBRATION_PROMPT_TOKENS + d.CALIBRATION_RESPONSE_TOKENS

    def instance(steps: int) -> Instance:
        raw: dict[str, Any] = {
            "name": case.spec.id, "student": case.spec.student.as_instance(),
            "task": {"baseline_score": start, "score_ceiling": ceiling, "general_score_baseline": UNUSED_GENERAL_SCORE,
                     "prompt_tokens": d.CALIBRATION_PROMPT_TOKENS, "response_tokens": d.CALIBRATION_RESPONSE_TOKENS,
                     # every prompt fresh: the anchors count samples as if none repeated (learning.effective_draws)
                     "max_response_tokens": d.CALIBRATION_MAX_RESPONSE_TOKENS, "prompts_available": steps * prompts},
            "training": {"methods": {method: {"steps_options": [steps], "prompts_per_step": prompts}}, "phases": 1,
                         "samples_per_prompt_options": [k]},
            "hardware": {"gpus": [{"name": d.CALIBRATION_GPU, "counts": [d.CALIBRATION_GPUS]}]},
        }
        if method == "sft":
            raw["sft_data"] = {"examples_available": steps * prompts, "usd_per_labeled_example": 0,
                               "labeled_examples_per_day": 1, "example_tokens": seq}
        if method == "opd":
            raw["teacher"] = _teacher(case, teacher_score(case, start))
        return case.instance(raw)

    def recipe(steps: int) -> Recipe:
        return Recipe("sft", steps, (), None, 1.0) if method == "sft" else _recipe(instance(steps), method, steps)

    def quality(steps: int) -> float:
        return Evaluator(instance(steps)).recipe(recipe(steps)).quality

    steps = smallest_reaching(quality, arm.target_score, MAX_SEARCH_STEPS)
    if steps is None:
        return None, None
    inst = instance(steps)
    ev = Evaluator(inst)
    h = HardwareChoice(inst.hardware.gpus[0].name, d.CALIBRATION_GPUS)
    r = recipe(steps)
    hp = ev.hardware(h)
    if not hp.fits(r.memory_class):
        raise PredictionError(f"{field}: the default calibration hardware cannot hold the job: {hp.memory_bytes_per_gpu(r.memory_class)[1]}")
    interval = min(inst.checkpointing.interval_minutes_options, key=hp.overhead_share)
    return ev.metrics(r, h, interval).gpu_hours, steps


def teacher_score(case: Case, start: float) -> float:
    """The case's ``teacher.score`` if given, else the default share of the headroom above the start."""
    given = case.spec.teacher.score
    if given is not None:
        return given
    return start + d.CALIBRATION_TEACHER_SHARE_OF_HEADROOM * (d.CALIBRATION_SCORE_CEILING - start)


def smallest_reaching(quality: Callable[[int], float], target: float, cap: int) -> int | None:
    """Smallest integer n >= 1 with quality(n) >= target (quality non-decreasing in n); None beyond ``cap``."""
    hi = 1
    while quality(hi) < target:
        if hi >= cap:
            return None
        hi = min(cap, hi * 2)
    lo = hi // 2  # quality(lo) < target, or lo == 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if quality(mid) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def predict_gpu_hours_ratio(case: Case) -> list[CalibrationRow]:
    """A ratio case's row: arm 0's GPU-hours over arm 1's (None when an arm does not reach its target)."""
    h0, _ = arm_gpu_hours(case, 0)
    h1, _ = arm_gpu_hours(case, 1)
    predicted = h0 / h1 if h0 is not None and h1 is not None else None
    return [_row(case, "gpu_hours_ratio", predicted, case.spec.published.gpu_hours_ratio)]


PREDICTORS: dict[str, Callable[[Case], list[CalibrationRow]]] = {
    "flops": predict_flops, "step_seconds": predict_step_seconds, "sft_hours": predict_sft_hours, "interruptions": predict_interruptions,
    "checkpoint_interval_minutes": predict_checkpoint_interval, "forgetting_points": predict_forgetting,
    "gpu_hours_ratio": predict_gpu_hours_ratio,
}


def published_figures(case: Case) -> list[tuple[str, float]]:
    """The figures a case publishes, as (figure, value): one per key of ``published``,
    one per element of a published list (``forgetting_points[i]``)."""
    out = []
    for key, value in case.spec.published.model_dump(exclude_none=True).items():
        if isinstance(value, list):
            out.extend((f"{key}[{i}]", v) for i, v in enumerate(value))
        else:
            out.append((key, value))
    return out


def calibrate_case(path: str | Path, transform: Callable[[Instance], Instance] | None = None) -> list[CalibrationRow]:
    """Rows of one case file; raises InputError naming the file and field when it
    cannot be read. A case that is read but cannot be predicted gives one failed
    row per published figure, with ``error`` saying why."""
    case = load_case(Path(path))
    case.transform = transform
    try:
        return PREDICTORS[case.spec.predict](case)
    except PredictionError as exc:
        return [CalibrationRow(case.spec.id, figure, None, value, None, False, case.spec.tolerance, str(case.path), str(exc),
                               **_notes(case))
                for figure, value in published_figures(case)]


def _number(value: Any) -> float | None:
    """``value`` as a float where it is a finite number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _stated_trainer(stated: Any, priced: bool) -> str | None:
    """The trainer note of a case whose other fields are bad: as on a good case where its ``trainer`` reads,
    None where it does not."""
    if stated is None:
        return "default"
    try:
        return Trainer.model_validate(stated).note(priced)
    except ValidationError:
        return None


def case_error_rows(exc: CaseReadError) -> list[CalibrationRow]:
    """The rows of a case whose fields are bad: one failed row per figure it publishes (as far as its
    ``published`` can be read; one row named after ``predict`` otherwise), each with ``error`` naming the fields."""
    data = exc.data
    case_id = data["id"] if isinstance(data.get("id"), str) else exc.path.stem
    published = data.get("published")
    figures: list[tuple[str, Any]] = []
    if isinstance(published, dict):
        for key, value in published.items():
            figures.extend(((f"{key}[{i}]", v) for i, v in enumerate(value)) if isinstance(value, list) else [(key, value)])
    if not figures:
        figures = [(data["predict"] if isinstance(data.get("predict"), str) else "-", None)]
    tolerance = _number(data.get("tolerance"))
    kind = data.get("predict")
    trainer = _stated_trainer(data.get("trainer"), kind in ("step_seconds", "sft_hours")) if kind in TRAINING_KINDS else None
    return [CalibrationRow(case_id, figure, None, _number(value), None, False, tolerance, str(exc.path),
                           f"not read: {exc.problem}", trainer)
            for figure, value in figures]


def calibrate_dir(directory: str | Path, progress: Callable[[int], None] | None = None) -> list[CalibrationRow]:
    """Rows of every ``*.json`` case in ``directory`` (sorted by file name); ``progress(k)`` after each
    case, with the number of rows so far. A case whose fields are bad gives its error rows
    (:func:`case_error_rows`); a file that is not a JSON object stops the folder (InputError)."""
    p = Path(directory)
    if not p.is_dir():
        raise InputError(f"{p}: not a directory of calibration cases")
    files = sorted(p.glob("*.json"))
    if not files:
        raise InputError(f"{p}: no *.json calibration cases")
    rows: list[CalibrationRow] = []
    for f in files:
        try:
            rows.extend(calibrate_case(f))
        except CaseReadError as exc:  # that case's fields are bad: its rows say so, the others still run
            rows.extend(case_error_rows(exc))
        if progress:
            progress(len(rows))
    return rows
