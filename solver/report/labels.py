"""Text shown to people in figures and reports: human names with units, labels of what changes between plans, safe strings.

A frontier or a sweep is a list of plans. Labelling every point with its whole
plan repeats the same words on every point; the reader wants what *changes*
along the curve. For plans :math:`p_1 \\dots p_n` and the plan's parts
:math:`f` (method, GPUs, length, sampling schedule, teacher precision, data mix,
epochs, adapter, checkpoint interval),

.. math::
   \\mathrm{varying} = \\{ f : |\\{ f(p_k) \\}_k| > 1 \\}, \\qquad
   \\mathrm{label}(p_k) = \\big( \\mathrm{show}_f(p_k) \\big)_{f \\in \\mathrm{varying}}

and the parts outside ``varying`` are said once, for every point.

Names in figures come from the user (an instance's name, a custom GPU's name),
so they are made safe for matplotlib (:func:`figure_text`): a lone UTF-16
surrogate (which JSON's ``"\\ud800"`` escape produces) is written as its
``\\ud800`` escape, since the font renderer refuses it, and every unescaped
``$`` becomes ``\\$``, so a name such as ``cost $x^$`` is drawn as typed instead
of being parsed (and refused) as mathtext. Mathtext itself stays on: log-scale
tick labels are mathtext.
"""

from __future__ import annotations

from dataclasses import replace

import re
from typing import Any, Callable, Iterable, Optional, Sequence

# Metric and limit names as a person reads them, and their units.
HUMAN_NAMES = {"cost_usd": "cost", "wall_hours": "wall time", "quality": "quality",
               "forgetting_points": "forgetting", "budget_usd": "budget", "deadline_hours": "deadline",
               "max_forgetting_points": "forgetting tolerance", "min_quality": "minimum quality"}
UNITS = {"cost_usd": "USD", "wall_hours": "h", "quality": "task score, pts",
         "forgetting_points": "pts of the general score", "budget_usd": "USD", "deadline_hours": "h",
         "max_forgetting_points": "pts of the general score", "min_quality": "task score, pts"}
# Axis labels: the human name with its unit in brackets.
LABELS = {key: f"{name} ({UNITS[key]})" for key, name in HUMAN_NAMES.items()}


def human(key: str) -> str:
    """A metric's or limit's name for people (the key itself when it has none)."""
    return HUMAN_NAMES.get(key, key.replace("_", " "))


def printable(text: Any) -> str:
    """``text`` as a string every renderer and terminal accepts: lone surrogates become ``\\udxxx`` escapes."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


_UNESCAPED_DOLLAR = re.compile(r"(?<!\\)\$")


def figure_text(text: Any) -> str:
    """``text`` as matplotlib draws it literally: printable, and no ``$`` left to start mathtext (idempotent)."""
    return _UNESCAPED_DOLLAR.sub(r"\\$", printable(text))


def _share(x: Optional[float]) -> Optional[str]:
    return None if x is None else f"{x:.0%} new-domain data"


def gpus_text(hardware) -> str:
    """A hardware choice in a few characters: ``16×B200``, with separate rollout GPUs ``16×B200 + 32×H100-SXM gen``."""
    text = f"{hardware.count}×{hardware.gpu}"
    return text + (f" + {hardware.rollout_count}×{hardware.rollout_gpu} gen" if hardware.rollout_gpu else "")


def method_text(method: str, staleness_steps: int = 0) -> str:
    """A method, with asynchronous RL's or OPD's staleness: ``rl``, ``rl async-1``, ``opd async-1``."""
    return f"{method} async-{staleness_steps}" if staleness_steps else method


# One entry per part of a plan: how to read it from the plan, and how to show it.
PLAN_PARTS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Optional[str]]]] = {
    "method": (lambda p: (p.method, getattr(p, "staleness_steps", 0)), lambda v: method_text(*v).upper()),
    # the GPUs alone: the adapter the choice also carries (``HardwareChoice.lora_rank``) is the "adapter" part
    "GPUs": (lambda p: replace(p.hardware, lora_rank=None), gpus_text),
    "steps": (lambda p: p.steps, lambda v: f"{v:,} steps"),
    "samples per prompt": (lambda p: tuple(p.samples_per_prompt),
                           lambda v: ("→".join(map(str, v)) + " samples") if v else None),
    "teacher precision": (lambda p: "→".join(getattr(p, "teacher_precision_by_phase", ())) or p.teacher_precision,
                          lambda v: f"{v} teacher" if v else None),
    "data mix": (lambda p: p.external_data_share, _share),
    "epochs": (lambda p: getattr(p, "max_epochs", None), lambda v: f"≤{v} epochs" if v else None),
    "adapter": (lambda p: getattr(p, "lora_rank", None), lambda v: f"LoRA rank {v}" if v else "full weights"),
    "checkpoint interval": (lambda p: p.checkpoint_interval_minutes, lambda v: f"ckpt {v:g} min"),
}


def varying_parts(plans: Sequence[Any]) -> list[str]:
    """The parts of the plans that take more than one value (all parts for fewer than two plans)."""
    if len(plans) < 2:
        return list(PLAN_PARTS)
    return [name for name, (get, _) in PLAN_PARTS.items() if len({get(p) for p in plans}) > 1]


def _show(plan: Any, parts: Iterable[str]) -> str:
    shown = (PLAN_PARTS[name][1](PLAN_PARTS[name][0](plan)) for name in parts)
    return printable(" · ".join(s for s in shown if s))


def change_labels(plans: Sequence[Any]) -> tuple[list[str], str]:
    """Labels of plans in the order they are drawn along a curve, and what every plan shares.

    The first plan's label names every part that varies along the curve; each later one names only
    the parts that differ from the plan before it ("" when none does). The parts no plan changes
    are returned once, as one line."""
    varying = varying_parts(plans)
    labels = [_show(p, varying if n == 0 else
                    [name for name in varying if PLAN_PARTS[name][0](p) != PLAN_PARTS[name][0](plans[n - 1])])
              for n, p in enumerate(plans)]
    if len(plans) < 2:
        return labels, ""
    return labels, _show(plans[0], [name for name in PLAN_PARTS if name not in varying])


def drop_overlapping(texts: Sequence[Any], renderer, inside=None) -> list[Any]:
    """Keep each text artist that overlaps no text kept before it (in the given order) and, when
    ``inside`` (a window-coordinate box, e.g. the axes') is given, lies wholly in it; remove the others.

    Returns the kept ones. Window extents need a drawn canvas (``fig.canvas.draw()``)."""
    kept, boxes = [], []
    for text in texts:
        box = text.get_window_extent(renderer)
        outside = inside is not None and not (inside.x0 <= box.x0 and box.x1 <= inside.x1
                                              and inside.y0 <= box.y0 and box.y1 <= inside.y1)
        if outside or any(box.overlaps(other) for other in boxes):
            text.remove()
            continue
        kept.append(text)
        boxes.append(box)
    return kept
