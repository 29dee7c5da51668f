"""What every exporter shares: the result of rendering one stage, and the lines for a plan's choices a target
cannot express."""

from __future__ import annotations

from dataclasses import dataclass, field

from planopt.errors import InputError


@dataclass
class Rendered:
    """One file's content (a mapping written as YAML or JSON) and the plan's choices it cannot hold."""

    content: dict
    not_expressed: list[str] = field(default_factory=list)
    header: list[str] = field(default_factory=list)   # lines the file opens with, as comments (how to use it)


def refuse(target: str, why: str) -> None:
    """A plan the target cannot run at all: one line, exit 2, no file."""
    raise InputError(f"--to {target}: {why}")


def phase_schedule(stage, target: str, key: str) -> tuple[int, list[str]]:
    """The single samples-per-prompt value a framework's ``key`` holds, and the note when the plan's per-phase
    schedule does not fit in one value (the first phase's value is written: the phases split the steps evenly,
    ``training.phases``)."""
    values = list(stage.samples_per_prompt)
    if len(set(values)) <= 1:
        return values[0], []
    return values[0], [f"stage {stage.number}: samples per prompt per phase {values} (the steps split evenly into "
                       f"{len(values)} phases); {target} holds one {key}, so the first phase's {values[0]} is written: "
                       "change it at each phase boundary, or run one job per phase"]


def common_notes(stage, target: str, has_async: bool = False, has_split_rollout: bool = False) -> list[str]:
    """Notes for choices several frameworks leave out: asynchronous RL or OPD, separate rollout GPUs, a data mix."""
    notes = []
    if stage.staleness_steps and not has_async:
        notes.append(f"stage {stage.number}: asynchronous {stage.method.upper()} with generation up to {stage.staleness_steps} step(s) behind "
                     f"the policy; {target}'s config here is synchronous")
    if stage.rollout is not None and not has_split_rollout:
        notes.append(f"stage {stage.number}: generation on {stage.rollout['gpu_count']} separate {stage.rollout['gpu']} "
                     f"GPUs; {target}'s config here colocates generation with training")
    if stage.method == "sft" and stage.external_data_share is not None and stage.external_data_share < 1:
        notes.append(f"stage {stage.number}: SFT data mix {stage.external_data_share:g} new-domain, the rest general data: "
                     "build the mixed data set before training")
    if stage.teacher_precision_by_phase:
        notes.append(f"stage {stage.number}: teacher precision per phase {list(stage.teacher_precision_by_phase)} (the steps "
                     f"split evenly); {target}'s config holds one, so the first phase's is written: reload the teacher "
                     "at its precision at each phase boundary, or run one job per phase")
    if stage.teacher_trained:
        notes.append(f"stage {stage.number}: the teacher is trained first, as its own job (the plan's teacher_training); "
                     "export or launch it separately")
    if stage.environments is not None:
        notes.append(environment_note(stage, target))
    if stage.pretraining_tokens:
        notes.append(f"stage {stage.number}: continued pre-training on {stage.pretraining_tokens / 1e9:g} B tokens of domain "
                     "text first, every weight trained (a pre-training job of its own): run it before this stage and "
                     "point the model path at its checkpoint")
    if stage.method == "sft" and stage.max_epochs and stage.max_epochs > 1:
        notes.append(f"stage {stage.number}: at most {stage.max_epochs} epochs over each owned example before buying more "
                     "(a data-purchase decision, not a trainer setting)")
    return notes + node_notes(stage)


def environment_note(stage, target: str) -> str:
    """The note for a stage whose environments run on a pool of workers (``environments.pools``)."""
    return (f"stage {stage.number}: environments on {stage.environments}; {target}'s config holds no pool of "
            "environment workers: start it beside the job and point the environment's endpoint at it")


def stage_header(job, stage) -> list[str]:
    """How a stage file is used: a later stage starts from the one before it."""
    if stage.number == 1:
        return []
    return [f"stage {stage.number} starts from stage {stage.number - 1}'s final checkpoint: point the model path there"]


def node_notes(stage) -> list[str]:
    """The note when the plan's GPU count does not fill whole nodes (the file asks for whole nodes)."""
    if stage.gpu_count % stage.gpus_per_node == 0:
        return []
    return [f"stage {stage.number}: {stage.gpu_count} GPUs do not fill whole {stage.gpus_per_node}-GPU nodes; "
            f"the file asks for {stage.num_nodes} nodes of {stage.gpus_on_each_node}"]
