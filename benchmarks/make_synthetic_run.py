"""Writes a synthetic run of a plan, from known parameters, as a TensorBoard log folder and a W&B-style CSV.

The series come from the evaluator's own functions (``ScenarioEvaluator`` over one scenario holding the true
parameters), plus seeded noise:

- ``train/step_time_s`` every step: the training seconds per step of its stage in its sampling phase
  (``fit.predict_scenarios``: compute hours × 3600 / steps without the evaluation runs, of the stage's recipe at that
  phase's samples) at the true step-time factor, times a log-normal noise of ``STEP_NOISE_RELATIVE``;
- ``_runtime`` (W&B) and the events' wall time (TensorBoard): the steps' seconds plus the stage's evaluation seconds
  per step, summed, stretched by the plan's checkpoint and failure overhead at the true parameters
  (``ScenarioEvaluator.overhead``);
- ``eval/math500`` every ``EVAL_EVERY`` steps: the task score of the plan stopped there (``runs.stages.prefix``: a
  staged plan's stages chained, ``fit.predict_scenarios``) plus a normal noise of ``fit``'s default task-score error;
- ``eval/ifeval`` every ``GENERAL_EVERY`` steps: the general score's baseline minus the forgetting there, plus
  ``GENERAL_NOISE_POINTS`` of noise;
- ``sys/num_gpus`` and ``cost/spend_usd`` every step: the GPU count of the stage the step lies in, and the GPUs'
  price × hours so far.

    python benchmarks/make_synthetic_run.py            # rewrites instances/runs/qwen3-8b-math-slow/
    python benchmarks/make_synthetic_run.py --check    # exits 1 if the shipped files differ from a fresh run

The shipped run: the truth is 1.5x slower steps, 30 % slower learning and 2x the forgetting of the prior's point
values (issue 26), for 20 % of the plan's steps, seed 26.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import struct
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "instances" / "runs" / "qwen3-8b-math-slow"
SEED = 26
# the parameters the prior does not know: step time x1.5, learning 30 % slower, forgetting x2
SLOW = {"step_time": 1.5, "learning": 0.7, "forgetting": 2.0}
POINT = {"step_time": 1.0, "learning": 1.0, "forgetting": 1.0}
SHARE_OF_PLAN = 0.2
EVAL_EVERY = 10
GENERAL_EVERY = 20
# 3 % log-normal noise on step times (the shipped pilot's, instances/pilot-qwen3-8b-math.csv); 1 point on the
# general score (a mean of IF-eval over 3 seeds, as the pilot's drop rows state)
STEP_NOISE_RELATIVE = 0.03
GENERAL_NOISE_POINTS = 1.0
# 2026-01-01T00:00:00Z: the runs' start on the events' clock (any fixed time keeps the file deterministic)
START_WALL_TIME = 1767225600.0
MAPPING = {"step_seconds": "train/step_time_s", "task_score": "eval/math500", "general_score": "eval/ifeval",
           "gpu_count": "sys/num_gpus", "spend_usd": "cost/spend_usd"}
EVENT_FILE = "events.out.tfevents.1767225600.synthetic"


def true_values(inst, factors: dict[str, float]) -> dict[str, float]:
    """The parameters of the truth: each point value of the uncertainty model moved by ``factors``."""
    from planopt.models.uncertainty import model as unc
    out = {}
    for p in unc.parameters(inst):
        if p.name in ("efficiency.mfu_factor", "efficiency.decode_factor"):
            out[p.name] = p.point / factors["step_time"]        # steps take step_time times as long
        elif p.name.endswith(".signal_scale_samples"):
            out[p.name] = p.point / factors["learning"]          # a curve reached at 1/learning the samples
        elif p.name.endswith(".forgetting_share_of_baseline"):
            out[p.name] = min(1.0, p.point * factors["forgetting"])
    return out


def synthetic_history(inst, plan, factors: dict[str, float], share: float = SHARE_OF_PLAN, seed: int = SEED):
    """The run's history as a W&B export's frame: ``_step``, ``_runtime`` and one column per series (NaN where a
    step did not log it)."""
    import pandas as pd

    from planopt.models.cost.evaluator import Evaluator
    from planopt.models.uncertainty.model import Scenarios
    from planopt.models.uncertainty.scenarios import ScenarioEvaluator
    from planopt.runs import stages
    from planopt.uncertainty import fit as fitting
    from planopt.uncertainty.predict import training_step
    values = {name: np.array([v]) for name, v in true_values(inst, factors).items()}
    sev = ScenarioEvaluator(Evaluator(inst), Scenarios(1, seed, values)).for_student(plan.student)
    rng = np.random.default_rng(seed)
    last = max(1, int(round(share * stages.total_steps(plan))))

    def at(stage):  # a stage's training seconds per step in each sampling phase, its evaluation seconds per step,
        # overhead stretch and GPUs' USD per hour
        r, phases = stage.recipe, max(1, len(stage.recipe.samples_per_prompt))
        per_phase = []
        for j in range(phases):  # the phase's step: the recipe run at that phase's samples throughout
            uniform = dataclasses.replace(r, samples_per_prompt=(r.samples_per_prompt[j],) * phases) if r.samples_per_prompt else r
            row = fitting.PilotRow(0, "step_seconds", stage.method, uniform, stage.hardware, 1.0, 1.0)
            per_phase.append(float(fitting.predict_scenarios(sev, row)[0]))
        by_component = sev.ev.step_hours_by_component(r, stage.hardware)
        evaluation = float(np.asarray(sev.compute_hours(by_component)).ravel()[0]) - float(
            np.asarray(sev.compute_hours(training_step(by_component))).ravel()[0])
        return (per_phase, evaluation * 3600.0 / r.steps,
                1.0 + float(np.asarray(sev.overhead(stage.hardware, plan.checkpoint_interval_minutes)).ravel()[0]),
                float(np.asarray(sev.gpus_usd_per_hour(stage.hardware)).ravel()[0]))

    def outcome(kind, k):  # the task score or forgetting of the plan stopped at step k (the stages chained)
        done = stages.prefix(plan, k)
        row = fitting.PilotRow(0, kind, done[-1][1].method, done[-1][1], None, 0.0, 1.0, tuple(r for _, r in done[:-1]))
        return float(fitting.predict_scenarios(sev, row)[0])

    per_stage = [at(stage) for stage in plan.stages]
    task_sd = fitting.DEFAULT_TASK_SCORE_STDDEV_SHARE_OF_CEILING * inst.task.score_ceiling
    rows, runtime, spend = [], 0.0, 0.0
    for k in range(1, last + 1):
        i = stages.stage_of(plan, k)
        per_phase, evaluation_s, stretch, per_hour = per_stage[i]
        own = k - stages.stage_start(plan, i)           # the stage's own step, 1-based; phases split its steps evenly
        step_s = per_phase[min(len(per_phase) - 1, (own - 1) * len(per_phase) // plan.stages[i].recipe.steps)]
        seconds = step_s * math.exp(STEP_NOISE_RELATIVE * rng.standard_normal())
        runtime += (seconds + evaluation_s) * stretch   # the evaluation runs' time, spread over the steps
        spend += per_hour * (seconds + evaluation_s) * stretch / 3600.0
        r = {"_step": k, "_runtime": runtime, MAPPING["step_seconds"]: seconds,
             MAPPING["gpu_count"]: plan.stages[i].hardware.count, MAPPING["spend_usd"]: spend}
        if k % EVAL_EVERY == 0 or k == last:
            quality = outcome("task_score", k)
            r[MAPPING["task_score"]] = float(np.clip(quality + task_sd * rng.standard_normal(), 0.0, inst.task.score_ceiling))
            if k % GENERAL_EVERY == 0 or k == last:
                forgetting = outcome("general_score_drop", k)
                general = inst.task.general_score_baseline - forgetting + GENERAL_NOISE_POINTS * rng.standard_normal()
                r[MAPPING["general_score"]] = float(max(0.0, general))
        rows.append(r)
    columns = ["_step", "_runtime", *MAPPING.values()]
    return pd.DataFrame(rows, columns=columns)


def write_wandb_csv(history, path: Path) -> None:
    """The history as a W&B export's CSV (empty cells where a step did not log a series)."""
    path.write_text(history.to_csv(index=False, float_format="%.10g"))


def write_tensorboard(history, folder: Path) -> Path:
    """The history as one TensorBoard event file (tensorboardX's record writer and protocol buffers), each event's
    wall time the run's start plus its ``_runtime``, so the file's bytes depend on the history alone."""
    from tensorboardX.proto import event_pb2, summary_pb2
    from tensorboardX.record_writer import masked_crc32c
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("events.out.tfevents.*"):
        old.unlink()
    path = folder / EVENT_FILE
    chunks = []

    def record(event) -> None:
        data = event.SerializeToString()
        header = struct.pack("<Q", len(data))
        chunks.append(header + struct.pack("<I", masked_crc32c(header)) + data + struct.pack("<I", masked_crc32c(data)))

    record(event_pb2.Event(wall_time=START_WALL_TIME, step=0, file_version="brain.Event:2"))
    names = [c for c in history.columns if c not in ("_step", "_runtime")]
    for cells in history.to_dict("records"):
        values = [summary_pb2.Summary.Value(tag=n, simple_value=float(cells[n])) for n in names if not math.isnan(cells[n])]
        record(event_pb2.Event(wall_time=START_WALL_TIME + float(cells["_runtime"]), step=int(cells["_step"]),
                               summary=summary_pb2.Summary(value=values)))
    path.write_bytes(b"".join(chunks))
    return path


def write_run(folder: Path, inst_path: Path, plan_path: Path, factors=SLOW, seed: int = SEED) -> None:
    """``tensorboard/``, ``wandb.csv`` and ``mapping.json`` of the plan at ``plan_path`` on ``inst_path``."""
    from planopt.api import evaluate_given_plan
    from planopt.instance import load_instance
    inst = load_instance(inst_path)
    plan, _ = evaluate_given_plan(inst, json.loads(plan_path.read_text()), str(plan_path))
    history = synthetic_history(inst, plan, factors, seed=seed)
    write_tensorboard(history, folder / "tensorboard")
    write_wandb_csv(history, folder / "wandb.csv")
    (folder / "mapping.json").write_text(json.dumps(MAPPING, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare a fresh run with the shipped files")
    args = parser.parse_args()
    if not args.check:
        write_run(RUN, RUN / "instance.json", RUN / "plan.json")
        return 0
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        write_run(Path(tmp), RUN / "instance.json", RUN / "plan.json")
        names = ["wandb.csv", "mapping.json", f"tensorboard/{EVENT_FILE}"]
        differ = [n for n in names if (Path(tmp) / n).read_bytes() != (RUN / n).read_bytes()]
    print("differs: " + ", ".join(differ) if differ else "the shipped run is what the generator writes")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
