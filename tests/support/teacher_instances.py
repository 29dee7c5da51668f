"""A teacher that does not exist yet, trained as a stage (``teacher.training``), put on a random job
with OPD: used by ``tests/models/cost/test_teacher_stage.py`` and ``layered_instances``."""

from __future__ import annotations

import random

from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.teacher_training import teacher_space
from planopt.instance import parse_instance


def with_trained_teacher(d: dict, rng: random.Random) -> dict | None:
    """``d`` (with OPD) with its teacher trained by RL from a random baseline to a random reachable score;
    None when nothing of the teacher's job fits."""
    baseline = rng.uniform(10, 50)
    d["teacher"].update(architecture={"preset": rng.choice(["Qwen3-1.7B", "Qwen3-4B"])}, exists=False, training_usd=0.0,
                        training_hours=0.0, score=baseline,
                        training={"baseline_score": baseline, "methods": {"rl": {"steps_options": [50, 400], "prompts_per_step": 32}}})
    d.setdefault("reward", {})
    try:
        inst = parse_instance(d)
    except ValueError:
        return None
    reached = sorted(o.quality for o in teacher_space(inst, Evaluator).usable.values())
    d["teacher"]["score"] = reached[int(rng.random() * len(reached))]
    return d
