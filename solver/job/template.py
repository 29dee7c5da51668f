"""``planopt init``: a complete, valid job from a few choices, every other value sourced
(``models/catalog/template.py``) or the schema's default, with an account of what was filled in and what to edit."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from planopt.models.catalog import CatalogLookupError, find_gpu, find_model
from planopt.models.catalog import template as t
from planopt.models.schema.hf_config import HfConfigError, architecture_from_hf_config
from planopt.models.schema.instance import METHODS, Architecture

from planopt.errors import InputError, read_json
from planopt.instance import instance_from

ARCH_FIELDS = Architecture.FIELDS


@dataclass
class Template:
    """A job ``init`` writes: its JSON object (``data``), what came from where (``filled``: field, value, source)
    and the fields to edit, each with why (``edit``)."""

    data: dict[str, Any]
    filled: list[tuple[str, str, str]] = field(default_factory=list)
    edit: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The template as ``init --json`` prints it."""
        return {"instance": self.data, "filled": [{"field": f, "value": v, "source": s} for f, v, s in self.filled],
                "edit": [{"field": f, "why": w} for f, w in self.edit]}


def parse_methods(text: str) -> list[str]:
    """``--methods sft,rl,opd`` as a list in the order stages run; InputError naming the flag otherwise."""
    names = [m.strip().lower() for m in text.split(",") if m.strip()]
    if not names:
        raise InputError(f"--methods: expected a comma-separated list of {', '.join(METHODS)}, got {text!r}")
    for name in names:
        if name not in METHODS:
            close = difflib.get_close_matches(name, METHODS, n=1, cutoff=0.5)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(f"--methods: unknown method {name!r}: {hint}expected {', '.join(METHODS)}")
    return [m for m in METHODS if m in names]


def parse_counts(text: str, flag: str) -> list[int]:
    """GPU counts ``8,16,32`` (or ``8:16`` inside ``--gpus``): positive integers, sorted and once each."""
    out = []
    for part in text.replace(":", ",").split(","):
        part = part.strip()
        if not part.isdigit() or int(part) < 1 or int(part) > 10**7:
            raise InputError(f"{flag}: expected GPU counts as positive integers, got {part!r} in {text!r}")
        out.append(int(part))
    return sorted(set(out))


def parse_gpus(text: str, counts: list[int]) -> list[dict[str, Any]]:
    """``--gpus H100-SXM,B200:8:16``: catalog GPUs (names or aliases), each with its own counts after colons or
    ``counts``; InputError naming the flag for a GPU the catalog does not know (or names ambiguously)."""
    entries, seen = [], set()
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, _, own = part.partition(":")
        try:
            spec = find_gpu(name.strip())
        except CatalogLookupError as exc:
            raise InputError(f"--gpus: {exc} (`planopt catalog --gpus` lists them)") from None
        if spec.name in seen:
            raise InputError(f"--gpus: {spec.name} is named twice")
        seen.add(spec.name)
        entries.append({"name": spec.name, "counts": parse_counts(own, "--gpus") if own else list(counts)})
    if not entries:
        raise InputError(f"--gpus: expected GPU names (`planopt catalog --gpus`), got {text!r}")
    return entries


def architecture_of(preset: Optional[str], hf_config: Optional[Path], flag: str) -> tuple[dict[str, Any], str, str]:
    """An architecture block from a catalog preset or a Hugging Face config.json; with how it is described and
    its source. InputError naming ``flag`` otherwise."""
    if preset is not None:
        try:
            spec = find_model(preset)
        except CatalogLookupError as exc:
            raise InputError(f"{flag}: {exc} (`planopt catalog --models` lists them)") from None
        what = (f"{spec.name}: {spec.params_b:g}B parameters ({spec.active_params_b:g}B active), {spec.layers} layers, "
                f"hidden {spec.hidden}, {spec.kv_heads} KV heads × {spec.head_dim}")
        return {"preset": spec.name}, what, "the catalog (`planopt catalog --models`)"
    config = read_json(hf_config)
    try:
        arch = architecture_from_hf_config(config)
    except HfConfigError as exc:
        raise InputError(f"{hf_config}: {exc}") from None
    kind = (f"{arch['params_b']:.3f}B parameters" + (f" ({arch['active_params_b']:.3f}B active)" if arch["moe"] else ""))
    what = (f"{arch['model_type']}: {kind}, {arch['layers']} layers, hidden {arch['hidden']}, "
            f"{arch['kv_heads']} KV heads × {arch['head_dim']}")
    return {f: arch[f] for f in ARCH_FIELDS}, what, f"{hf_config} (models/schema/hf_config.py)"


def _teacher(out: Template, teacher: Optional[str], teacher_score: Optional[float], baseline: float) -> dict:
    """The ``teacher`` block of an OPD job (``--teacher`` a preset or a config file; ``--teacher-score`` or the
    template's share of the headroom), noted in ``out``."""
    if teacher is None:
        raise InputError("--methods: opd needs a teacher: --teacher PRESET or --teacher config.json")
    path = Path(teacher)
    is_file = teacher.endswith(".json") or path.is_file()
    t_arch, t_what, t_source = architecture_of(None if is_file else teacher, path if is_file else None, "--teacher")
    score = teacher_score
    if score is None:
        score = round(baseline + t.TEACHER_SHARE_OF_HEADROOM * (100.0 - baseline), 1)
        out.edit.append(("teacher.score", f"{score:g}: closes the share of the headroom Qwen3-235B-A22B closes "
                         "over Qwen3-8B; your teacher's score (--teacher-score)"))
    out.filled.append(("teacher", t_what, t_source))
    return {"architecture": t_arch, "score": score}


def build_template(*, student: Optional[str] = None, hf_config: Optional[Path] = None,
                   task_score_baseline: Optional[float] = None, target: Optional[float] = None,
                   methods: str = ",".join(t.METHODS_DEFAULT), gpus: str = ",".join(t.GPUS_DEFAULT),
                   gpu_counts: str = ",".join(str(n) for n in t.GPU_COUNTS_DEFAULT),
                   budget_usd: Optional[float] = None, deadline_hours: Optional[float] = None,
                   max_forgetting: Optional[float] = None, teacher: Optional[str] = None,
                   teacher_score: Optional[float] = None, name: str = "job", source: str = "job.json") -> Template:
    """The job ``planopt init`` writes, validated as ``planopt validate`` would (InputError naming the flag or
    the field otherwise)."""
    if (student is None) == (hf_config is None):
        raise InputError("give one of --student PRESET (`planopt catalog --models`) and --hf-config config.json")
    for flag, value in (("--task-score-baseline", task_score_baseline), ("--target", target),
                        ("--budget-usd", budget_usd), ("--deadline-hours", deadline_hours),
                        ("--max-forgetting", max_forgetting), ("--teacher-score", teacher_score)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise InputError(f"{flag}: expected a finite number of at least 0, got {value!r}")
    chosen = parse_methods(methods)
    hardware = parse_gpus(gpus, parse_counts(gpu_counts, "--gpu-counts"))
    arch, arch_what, arch_source = architecture_of(student, hf_config, "--student" if student else "--hf-config")
    baseline = t.TASK_SCORE_BASELINE if task_score_baseline is None else task_score_baseline
    out = Template(data={})
    out.filled.append(("student", arch_what, arch_source))
    task = {"baseline_score": baseline, "general_score_baseline": t.GENERAL_SCORE_BASELINE,
            "prompt_tokens": t.PROMPT_TOKENS, "response_tokens": t.RESPONSE_TOKENS,
            "max_response_tokens": t.MAX_RESPONSE_TOKENS, "prompts_available": t.PROMPTS_AVAILABLE}
    if task_score_baseline is None:
        out.edit.append(("task.baseline_score", f"{baseline:g}: Qwen3-8B's AIME'24 start; give yours (--task-score-baseline)"))
    else:
        out.filled.append(("task.baseline_score", f"{baseline:g}", "--task-score-baseline"))
    out.edit.append(("task.general_score_baseline", f"{t.GENERAL_SCORE_BASELINE:g}: IF-eval of TML's forgetting runs; "
                     "your model's general score, against which forgetting is measured"))
    out.edit.append(("task.prompt_tokens, response_tokens, max_response_tokens",
                     f"{t.PROMPT_TOKENS:g}, {t.RESPONSE_TOKENS:g}, {t.MAX_RESPONSE_TOKENS:g}: the calibration's math-"
                     "reasoning lengths; your task's"))
    out.edit.append(("task.prompts_available", f"{t.PROMPTS_AVAILABLE:,}: DeepScaleR-Preview's math problems; your prompt set's"))
    training = {"methods": {m: {"steps_options": list(t.STEPS_OPTIONS[m]), "prompts_per_step": t.PROMPTS_PER_STEP[m]}
                            for m in chosen}}
    out.filled.append(("training.methods", "; ".join(
        f"{m}: steps {'/'.join(str(s) for s in t.STEPS_OPTIONS[m])}, {t.PROMPTS_PER_STEP[m]} per step" for m in chosen),
        "--methods; lengths around the published runs (models/catalog/template.py)"))
    data: dict[str, Any] = {"name": name, "student": arch, "task": task, "training": training}
    if "sft" in chosen:
        data["sft_data"] = {"examples_available": t.EXAMPLES_AVAILABLE, "usd_per_labeled_example": t.USD_PER_LABELED_EXAMPLE,
                            "labeled_examples_per_day": t.LABELED_EXAMPLES_PER_DAY,
                            "example_tokens": t.PROMPT_TOKENS + t.RESPONSE_TOKENS}
        out.edit.append(("sft_data", f"{t.EXAMPLES_AVAILABLE} examples owned, ${t.USD_PER_LABELED_EXAMPLE:g} per labeled "
                         f"example, {t.LABELED_EXAMPLES_PER_DAY:,} a day: placeholders, no published default"))
    if "opd" not in chosen and (teacher is not None or teacher_score is not None):
        flag = "--teacher" if teacher is not None else "--teacher-score"
        raise InputError(f"{flag}: a teacher scores OPD's samples only; add opd to --methods or leave {flag} out")
    if "opd" in chosen:
        data["teacher"] = _teacher(out, teacher, teacher_score, baseline)
    data["hardware"] = {"gpus": hardware}
    out.filled.append(("hardware.gpus", ", ".join(f"{g['name']} × {'/'.join(str(n) for n in g['counts'])}" for g in hardware),
                       "--gpus; prices: the catalog's on-demand price (`planopt catalog --gpus`)"))
    constraints = {k: v for k, v in (("budget_usd", budget_usd), ("deadline_hours", deadline_hours),
                                     ("max_forgetting_points", max_forgetting), ("min_quality", target)) if v is not None}
    if constraints:
        data["constraints"] = constraints
        out.filled.append(("constraints", ", ".join(f"{k} {v:g}" for k, v in constraints.items()),
                           "--budget-usd, --deadline-hours, --max-forgetting, --target"))
    if target is None:
        out.edit.append(("constraints.min_quality", "none: the cheapest plan trains least; set the score you need (--target)"))
    out.filled.append(("everything else", "the schema's defaults", "sourced in models/catalog/defaults.py (`planopt schema`)"))
    out.data = data
    try:
        instance_from(data, source)   # what validate checks of the schema and the consistency rules
    except InputError as exc:
        raise InputError(f"the job would not be valid: {exc}") from None
    return out
