"""When no (GPU, count) of an instance holds any recipe in memory: the least change of its hardware options that
would make some plan fit (issue 27, lever 8), as for every other infeasibility.

Each candidate is tried alone on a copy of the instance, and a change counts when some hardware choice of the
copy holds some memory class of it (``HardwareProfile.fits``, the memory model the MIP and the evaluator use):

- **more GPUs of a listed type**: per GPU entry, the smallest power-of-two count above its largest listed one
  that fits (availability lifted; training state, optimiser and activations shard over the GPUs, so more of
  them hold more). Counts are searched up to :data:`MAX_SEARCHED_GPUS`;
- **LoRA**, when ``training.adapter_options`` does not offer it, at the smallest rank of ``lora_rank_options``;
- **CPU offload**, when ``training.cpu_offload`` is false: ``"if_needed"`` (offload only where nothing else fits);
- **a bigger GPU of the catalog**: the catalog accelerator with the least memory above the largest listed one's
  that fits at one of the instance's listed counts (the smallest such count).

A change that makes a plan fit in memory does not promise that plan meets the limits; a solve of the changed
instance says that (its own relaxations, if any, follow).
"""

from __future__ import annotations

import json
from typing import Any

from planopt.models.cost.evaluator import Evaluator
from planopt.models.schema.instance import GpuOption, Instance

# The largest gang searched for "more GPUs": 1024 GPUs, 128 nodes of 8. Not a cost figure: a bound on the search
# (the counts double, so it costs at most 10 tries an entry); a job that needs more is reported as not fitting.
MAX_SEARCHED_GPUS = 1024


def fitting_choices(inst: Instance) -> list:
    """The hardware choices of ``inst`` that hold at least one of its memory classes."""
    ev = Evaluator(inst)
    classes = ev.memory_classes()
    return [h for h in ev.space()[1] if any(ev.hardware(h).fits(k) for k in classes)]


def _shown(choices: list) -> str:
    return ", ".join(f"{h.count} × {h.gpu}" + (" with CPU offload" if h.cpu_offload else "") for h in choices[:3]) \
        + (" …" if len(choices) > 3 else "")


def _entry(constraint: str, required: float | None, change: str, fits: list, what: str) -> dict[str, Any]:
    return {"constraint": constraint, "required": required, "together": False, "kind": "hardware", "change": change,
            "fits_on": _shown(fits), "text": f"{what}: fits on {_shown(fits)}"}


def _with_gpus(inst: Instance, gpus: list[GpuOption]) -> Instance:
    return inst.model_copy(update={"hardware": inst.hardware.model_copy(update={"gpus": gpus})})


def more_gpus(inst: Instance) -> list[dict[str, Any]]:
    """Per GPU entry, the smallest power-of-two count above its listed ones that holds a recipe."""
    out = []
    for i, o in enumerate(inst.hardware.gpus):
        n = 1
        while n <= max(o.counts):
            n *= 2
        while n <= MAX_SEARCHED_GPUS:
            trial = _with_gpus(inst, [o.model_copy(update={"counts": [n], "available_gpus": None})])
            fits = fitting_choices(trial)
            if fits:
                over = o.available_gpus is not None and n > o.available_gpus
                out.append(_entry(f"hardware.gpus.{i}.counts", float(n), f"add {n}", fits,
                                  f"more GPUs: {n} × {o.key}" + (f" (over its available_gpus {o.available_gpus})" if over else "")))
                break
            n *= 2
    return out


def lora(inst: Instance) -> list[dict[str, Any]]:
    """LoRA at the smallest offered rank, when the instance does not offer LoRA and it would fit."""
    t = inst.training
    if "lora" in t.adapter_options:
        return []
    rank = min(t.lora_rank_options)
    options = list(t.adapter_options) + ["lora"]
    trial = inst.model_copy(update={"training": t.model_copy(update={"adapter_options": options,
                                                                     "lora_rank_options": [rank]})})
    fits = fitting_choices(trial)
    return [_entry("training.adapter_options", None, json.dumps(options), fits,
                   f"a rank-{rank} LoRA adapter (frozen base weights)")] if fits else []


def offload(inst: Instance) -> list[dict[str, Any]]:
    """CPU offload where needed, when the instance does not allow it and it would fit."""
    t = inst.training
    if t.cpu_offload is not False:
        return []
    trial = inst.model_copy(update={"training": t.model_copy(update={"cpu_offload": "if_needed"})})
    fits = fitting_choices(trial)
    return [_entry("training.cpu_offload", None, '"if_needed"', fits,
                   "CPU offload of parameters, gradients and optimiser state")] if fits else []


def bigger_gpu(inst: Instance) -> list[dict[str, Any]]:
    """The catalog accelerator with the least memory above the listed ones' that holds a recipe at a listed count."""
    from planopt.models.catalog import load_gpus
    largest = max(o.spec().hbm_gb for o in inst.hardware.gpus)
    counts = sorted({n for o in inst.hardware.gpus for n in o.counts})
    for spec in sorted((g for g in load_gpus().values() if g.hbm_gb > largest), key=lambda g: (g.hbm_gb, g.name)):
        for n in counts:
            try:
                option = GpuOption.model_validate({"name": spec.name, "counts": [n]})
            except ValueError:
                continue   # the catalog gives it no reference price: the instance could not list it as it is
            fits = fitting_choices(_with_gpus(inst, [option]))
            if fits:
                return [_entry("hardware.gpus", float(n), json.dumps({"name": spec.name, "counts": [n]}), fits,
                               f"a bigger GPU: {spec.name} ({spec.hbm_gb:g} GB)")]
    return []


def hardware_relaxations(inst: Instance) -> list[dict[str, Any]]:
    """Each change of the hardware options that alone makes some plan fit in memory (the module docstring), as
    ``relaxations`` entries: ``constraint`` the field to change, ``required`` the count (null where the change is
    not a number), ``kind`` ``"hardware"``, ``change`` what to set or add, ``fits_on`` the choices that then fit."""
    return more_gpus(inst) + lora(inst) + offload(inst) + bigger_gpu(inst)
