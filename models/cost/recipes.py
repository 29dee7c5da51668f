r"""Recipes: the training choices that quality and forgetting depend on.

A recipe fixes the method, the training length, the samples per prompt in
each phase (RL, OPD), the teacher precision (OPD), the data mix and the most
epochs over each distinct new-domain example (SFT), and the adapter (full
weights, or LoRA of rank :math:`r`). Its
*profile* is everything that does not depend on the hardware:

- work amounts per component (tokens to decode, FLOPs to compute, steps), each
  later multiplied by a per-hardware time per unit (``hardware.py``), the
  validation decodes included (``evaluation.every_steps``);
- money that does not scale with GPU time (labels, verifiers, sandboxes billed per
  CPU-hour used, traffic and API calls to the environments, logs, log ingest, egress of
  what crosses a region); with ``environments.pools`` the environments' work in CPU-seconds
  (``env_cpu_seconds``), which the hardware choice's pool turns into hours (``environments.py``);
- lead time before training can start (labels, teacher: a lump, or a teacher plan's wall
  hours when the teacher is trained as a stage, ``teacher_training.py``);
- quality reached and forgetting;
- the size of a checkpoint (full state, or the adapter's).

LoRA (``lora_rank``): training FLOPs :math:`4N` per token instead of :math:`6N`
(frozen weights have no weight gradients), FSDP and offload traffic without
gradients for the frozen weights, the weight hand-over of the adapter alone, and
quality and forgetting as shares of full fine-tuning's (``learning.lora_outcomes``):

.. math:: q = q_0 + g_m (q^{full} - q_0), \qquad F = \phi_m F^{full}

Asynchronous RL and OPD (``staleness_steps`` above 0, ``asynchronous.py``): the same
work, each component under its sampling phase's key so that generation and training
(OPD's teacher scoring among it) can overlap phase by phase, and :math:`(1 - \delta_m)^s`
of the quality gain, :math:`\delta_m` the method's own (``Priors.staleness_loss``).

Quality and forgetting come from ``learning.py`` (learning curves, forgetting).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field, replace

from planopt.models.cost import learning as lc
from planopt.models.cost.components import (  # noqa: F401  (also read from here)
    DECODE, TAIL, SYNC, PREFILL, STUDENT_FWD, TEACHER, REWARD_MODEL, TRAIN, ENV_WAIT, TRAIN_A2A, LOGPROB_A2A, ATTN,
    FSDP, OFFLOAD_STREAM, OFFLOAD_STATE, EVAL, HOURS_CATEGORY, RATE_FACTOR, SftShape, adapter_ranks, component,
    family_of, sft_sequence_tokens, sft_shape, CP_TRAIN, CP_LOGPROB, CP_SFT_SEQ, CP_ROLLOUT_SEQ, ENV_CPU)
from planopt.models.cost import context as cx
from planopt.models.cost import environments as envs
from planopt.models.cost.asynchronous import staleness_options
from planopt.models.cost import physics as ph
from planopt.models.cost import pretraining as pt
from planopt.models.catalog import defaults as d
from planopt.models.schema.plan import Recipe
from planopt.models.schema.instance import Instance


@dataclass(frozen=True)
class RecipeProfile:
    """What a recipe needs and reaches, whatever the hardware: work amounts per component, FLOPs, samples, data and
    storage money, quality and forgetting."""

    recipe: Recipe
    amounts: dict[str, float]
    flops: dict[str, float]
    samples: float
    data_usd: float
    environments_usd: float
    log_storage_usd: float
    lead_hours: float
    quality: float
    forgetting_points: float
    extra: dict[str, float] = field(default_factory=dict)
    checkpoint_gb: float = 0.0      # one resumable checkpoint (full state, or the adapter's)
    network_usd: float = 0.0        # egress of what crosses a region (``network.crosses_region``)
    log_ingest_usd: float = 0.0     # trajectory-log ingest and indexing
    fixed_data_usd: float = 0.0     # the part of data_usd paid once whatever the length (``quantities.py``)
    fixed_network_usd: float = 0.0  # the part of network_usd that is one transfer (final weights, milestones)
    labels_usd: float = 0.0         # the SFT labels bought, in data_usd (``releases.py``: a share recurs)


def schedules(inst: Instance) -> list[tuple[int, ...]]:
    """Samples per prompt per phase, in the order of ``itertools.product`` over the sorted options; tapered
    schedules never rise. Listed once per (options, phases, taper) (``_schedules``): an instance asks for them
    once per method, length and precision."""
    t = inst.training
    return list(_schedules(tuple(sorted(set(t.samples_per_prompt_options))), t.phases, bool(t.taper_only)))


@functools.lru_cache(maxsize=64)
def _schedules(opts: tuple[int, ...], phases: int, taper_only: bool) -> tuple[tuple[int, ...], ...]:
    """:func:`schedules`: with ``taper_only`` each phase's options are only those not above the previous phase's,
    so the non-rising schedules are generated directly (C(k + p - 1, p) of them, not the k^p of the product),
    in the product's order (each position ascends within its prefix)."""
    if not taper_only:
        return tuple(itertools.product(opts, repeat=phases))
    out: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...]) -> None:
        if len(prefix) == phases:
            out.append(prefix)
            return
        for k in opts:
            if prefix and k > prefix[-1]:
                break
            extend(prefix + (k,))

    extend(())
    return tuple(out)


def enumerate_recipes(inst: Instance, teachers: tuple = (None,)) -> list[Recipe]:
    """Every recipe the instance allows, in a stable order: of every method in ``training.methods``, or, when
    ``training.stage_sequences`` lists only one-stage sequences, of those methods alone (a staged instance's
    stages pick their own methods from these, ``formulation/space.py``). ``teachers``: the teacher plans an OPD
    recipe is offered with (``teacher_training.teacher_plans``; None: the teacher exists or is a lump)."""
    t = inst.training
    allowed = set(t.methods) if t.staged else {seq[0] for seq in t.sequences()}
    recipes: list[Recipe] = []
    for lora in adapter_ranks(inst):
        for method, opts in inst.training.methods.items():
            if method not in allowed:
                continue
            for steps in sorted(set(opts.steps_options)):
                if method == "sft":
                    for share in sorted(set(inst.sft_data.external_data_share_options)):
                        recipes.extend(Recipe("sft", steps, (), None, share, e, lora)
                                       for e in sorted(set(inst.sft_data.max_epochs_options)))
                elif method == "rl":
                    recipes.extend(Recipe("rl", steps, s, lora_rank=lora, staleness_steps=stale) for s in schedules(inst)
                                   for stale in staleness_options(inst, "rl"))
                else:
                    for p in teacher_precision_schedules(inst):
                        recipes.extend(Recipe("opd", steps, s, p[0], lora_rank=lora, teacher_training=t,
                                              teacher_precision_by_phase=p, staleness_steps=stale)
                                       for s in schedules(inst) for t in teachers
                                       for stale in staleness_options(inst, "opd"))
    if inst.continued_pretraining is not None:  # each full-weight recipe once per token count (pretraining.py)
        tokens = pt.token_options(inst)
        recipes = [replace(r, pretraining_tokens=t) for r in recipes for t in tokens if not t or r.lora_rank is None]
    return recipes


def teacher_precision_schedules(inst: Instance) -> list[tuple[str, ...]]:
    """The teacher's precision in each sampling phase an OPD recipe may have: one precision for every phase, each
    of ``teacher.precision_options`` in sorted order; under ``teacher.precision_by_phase`` every sequence of them,
    in the order of ``itertools.product`` (|P|^phases, the one-precision ones among them)."""
    opts = sorted(set(inst.teacher.precision_options))
    if not inst.teacher.precision_by_phase:
        return [(p,) * inst.training.phases for p in opts]
    return list(itertools.product(opts, repeat=inst.training.phases))


def check_recipe(inst: Instance, r: Recipe) -> None:
    """Raise ValueError naming the plan field when a recipe is not an option of the instance (its teacher plan is
    checked where it is priced, ``teacher_training.teacher_lump``)."""
    opts = inst.training.methods.get(r.method)
    if opts is None:
        raise ValueError(f"plan.method: '{r.method}' is not in training.methods ({', '.join(inst.training.methods)})")
    if r.steps not in opts.steps_options:
        raise ValueError(f"plan.steps: {r.steps} is not in training.methods.{r.method}.steps_options {opts.steps_options}")
    if r.adapter not in inst.training.adapter_options:
        raise ValueError(f"plan.adapter: '{r.adapter}' is not in training.adapter_options {inst.training.adapter_options}")
    if r.lora_rank is not None and r.lora_rank not in inst.training.lora_rank_options:
        raise ValueError(f"plan.lora_rank: {r.lora_rank} is not in training.lora_rank_options {inst.training.lora_rank_options}")
    if r.method == "sft":
        _check_sft_fields(inst, r)
    else:
        _check_on_policy_fields(inst, r)
    pt.check_recipe_tokens(inst, r)


def _check_sft_fields(inst: Instance, r: Recipe) -> None:
    """:func:`check_recipe`'s checks of an SFT recipe's own fields: no teacher, sampling schedule, teacher
    precision or staleness; an external data share and a max epochs among the instance's options."""
    if r.teacher_training is not None:
        raise ValueError("plan.teacher_training: expected null: only an OPD plan has a teacher, not sft")
    if r.samples_per_prompt or r.teacher_precision is not None:
        raise ValueError("plan.samples_per_prompt / plan.teacher_precision: must be empty/null for sft")
    if r.external_data_share not in inst.sft_data.external_data_share_options:
        raise ValueError(f"plan.external_data_share: expected one of {inst.sft_data.external_data_share_options}")
    if r.max_epochs not in inst.sft_data.max_epochs_options:
        raise ValueError(f"plan.max_epochs: expected one of sft_data.max_epochs_options {inst.sft_data.max_epochs_options}")
    if r.staleness_steps:
        raise ValueError(f"plan.staleness_steps: {r.staleness_steps} is not an option: expected 0 for sft (only RL and OPD "
                         "run asynchronously)")


def _check_on_policy_fields(inst: Instance, r: Recipe) -> None:
    """:func:`check_recipe`'s checks of an RL or OPD recipe's own fields: no SFT data fields, a sampling
    schedule of the instance's, a staleness of its options, a teacher precision exactly for OPD."""
    if r.external_data_share is not None:
        raise ValueError(f"plan.external_data_share: must be null for {r.method}")
    if r.max_epochs is not None:
        raise ValueError(f"plan.max_epochs: must be null for {r.method}")
    if tuple(r.samples_per_prompt) not in set(schedules(inst)):
        raise ValueError(f"plan.samples_per_prompt: expected {inst.training.phases} values from {inst.training.samples_per_prompt_options}"
                         + (" that never rise" if inst.training.taper_only else ""))
    if r.staleness_steps not in staleness_options(inst, r.method):
        raise ValueError(f"plan.staleness_steps: {r.staleness_steps} is not an option: expected "
                         + ("0 for opd (training.asynchronous_opd is false)" if r.method == "opd"
                            and not inst.training.asynchronous_opd else "one of training.staleness_steps_options "
                            + str(inst.training.staleness_steps_options)))
    if r.method == "opd":
        if r.teacher_precision not in inst.teacher.precision_options:
            raise ValueError(f"plan.teacher_precision: expected one of {inst.teacher.precision_options}")
        _check_precision_by_phase(inst, r)
    elif r.teacher_precision is not None or r.teacher_precision_by_phase:
        raise ValueError("plan.teacher_precision: must be null for rl")


def _check_precision_by_phase(inst: Instance, r: Recipe) -> None:
    """An OPD recipe's ``teacher_precision_by_phase``: empty, or (under ``teacher.precision_by_phase``) one of
    ``teacher.precision_options`` per sampling phase."""
    by_phase = r.teacher_precision_by_phase
    if not by_phase:
        return
    field = "plan.teacher_precision_by_phase"
    if not inst.teacher.precision_by_phase:
        raise ValueError(f"{field}: teacher.precision_by_phase is false, so one precision scores every phase; "
                         "expected null")
    if len(by_phase) != inst.training.phases or any(p not in inst.teacher.precision_options for p in by_phase):
        raise ValueError(f"{field}: expected {inst.training.phases} values from teacher.precision_options "
                         f"{inst.teacher.precision_options}, got {list(by_phase)}")


def _train_alltoall_passes(inst: Instance) -> float:
    """All-to-all passes of a training step: forward and backward (a dispatch's
    backward is a combine), plus a recomputed forward with activation recomputation."""
    return 3.0 if inst.training.activation_recompute else 2.0


def _sft_profile(inst: Instance, r: Recipe) -> RecipeProfile:
    r"""SFT work (shape in :func:`sft_shape`): 6N or 8N FLOPs per computed token,
    attention FLOPs at the token's context, one set of FSDP collectives (and, with
    CPU offload, of host-link streaming) per micro-step, the optimiser state over
    the host link once per optimiser step (``prompts_per_step`` examples). The
    new-domain examples seen, :math:`X`, come from :math:`U` distinct ones
    (``learning.sft_distinct_examples``: owned ones reused up to ``max_epochs``
    passes, then bought) and count :math:`D'(U, X)` fresh ones on the learning
    curve; forgetting follows the examples seen, repeated or not."""
    stu, task, data, pri = inst.student, inst.task, inst.sft_data, inst.priors
    recompute = inst.training.activation_recompute
    examples = r.steps * inst.training.methods["sft"].prompts_per_step
    external = examples * r.external_data_share
    distinct = lc.sft_distinct_examples(external, data.examples_available, r.max_epochs)
    to_buy = max(0.0, distinct - data.examples_available)
    effective = float(lc.sft_effective_examples(external, data.examples_available, r.max_epochs, pri.sft_repeat_scale_epochs))
    shape = sft_shape(inst)
    tokens = examples * shape.real_tokens
    padded = examples * shape.computed_tokens
    train = padded * ph.train_flops_per_token(stu, recompute, r.lora_rank)
    model_train = tokens * ph.train_flops_per_token(stu, False, r.lora_rank)
    sequences = examples / shape.examples_per_microstep  # micro-steps summed over the GPUs
    quality = float(lc.sft_quality(task, effective, pri.sft.signal_scale_samples, pri.sft.ceiling_share_of_headroom))
    forgetting = float(lc.sft_forgetting(task, r.external_data_share, examples, pri.sft.forgetting_share_of_baseline,
                                         pri.sft_forgetting_mix_exponent, pri.sft_forgetting_scale_samples))
    quality, forgetting = _adapter_outcomes(inst, r, quality, forgetting)
    attention = padded * ph.attention_flops_per_token(stu, shape.context_tokens, recompute)
    amounts = {component(TRAIN): train, component(ATTN): attention,
               component(FSDP): sequences * ph.fsdp_bytes_per_sequence(stu, r.lora_rank)}
    a2a = ph.moe_alltoall_bytes_per_token(stu)
    if a2a > 0:
        amounts[component(TRAIN_A2A)] = padded * a2a * _train_alltoall_passes(inst)
    if cx.offered(inst):  # context parallelism's KV ring (context.py): the trained tokens' K and V per pass unit
        amounts[component(CP_TRAIN, CP_SFT_SEQ)] = padded * cx.ring_bytes_per_token(stu) * cx.training_passes(recompute)
    if inst.training.cpu_offload:
        amounts[component(OFFLOAD_STREAM)] = sequences * ph.offload_stream_bytes_per_sequence(stu, r.lora_rank)
        amounts[component(OFFLOAD_STATE)] = r.steps * ph.offload_state_bytes_per_step(stu, r.lora_rank)
    _add_evaluation(inst, r, amounts)
    return RecipeProfile(
        recipe=r, amounts=amounts, flops={"student_train": model_train, "student_train_hardware": train, "student_attention": attention},
        samples=examples, data_usd=to_buy * data.usd_per_labeled_example, labels_usd=to_buy * data.usd_per_labeled_example,
        environments_usd=0.0, log_storage_usd=0.0,
        lead_hours=24.0 * to_buy / data.labeled_examples_per_day, quality=quality, forgetting_points=forgetting,
        extra={"examples": examples, "labels_bought": to_buy, "trained_tokens": tokens, "computed_tokens": padded, "sequences": sequences,
               "distinct_examples": distinct, "effective_examples": effective, "external_examples": external},
        **_side_money(inst, r, log_gb=0.0))


def _on_policy_profile(inst: Instance, r: Recipe, teacher: tuple[float, float]) -> RecipeProfile:
    stu, task, pri = inst.student, inst.task, inst.priors.of(r.method)
    prompts = inst.training.methods[r.method].prompts_per_step
    seq = task.prompt_tokens + task.response_tokens
    phase_steps = r.steps / inst.training.phases
    cls = r.memory_class
    amounts: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        amounts[key] = amounts.get(key, 0.0) + value

    samples = 0.0
    for k in r.samples_per_prompt:
        n = phase_steps * prompts * k
        samples += n
        add(component(DECODE, cls, k), n * task.response_tokens)
    ceiling = lc.on_policy_ceiling(inst, r, pri.ceiling_share_of_headroom)
    q = float(lc.on_policy_quality(inst, r, pri.signal_scale_samples, pri.ceiling_share_of_headroom,
                                   inst.priors.prompt_repeat_scale_epochs))
    drawn = r.steps * prompts
    effective = _effective_draws(float(task.prompts_available), float(drawn), float(inst.priors.prompt_repeat_scale_epochs))
    add(component(TAIL, cls), r.steps)
    add(component(SYNC, cls), r.steps)
    fwd = ph.forward_flops_per_token(stu)
    add(component(PREFILL), samples * task.prompt_tokens * fwd)
    # RL: the reference model's pass (KL), plus the policy's own unless the software
    # release skips it (force_on_policy_ratio, NeMo RL v0.7; physics.recomputes_policy_logprobs).
    logprob_passes = (int(ph.recomputes_policy_logprobs(inst.efficiency)) + int(inst.training.reference_logprobs)
                      if r.method == "rl" else 1)
    add(component(STUDENT_FWD), samples * seq * fwd * logprob_passes)
    flops = {"student_generate": samples * (task.prompt_tokens + task.response_tokens) * fwd,
             "student_logprob": samples * seq * fwd * logprob_passes}
    if r.method == "opd":
        flops["teacher"] = _add_teacher_scoring(inst, r, samples, seq, add)
    if r.method == "rl" and inst.reward.reward_model is not None:
        rm = samples * seq * ph.forward_flops_per_token(inst.reward.reward_model)
        add(component(REWARD_MODEL), rm)
        flops["reward_model"] = rm
    train = samples * seq * ph.train_flops_per_token(stu, inst.training.activation_recompute, r.lora_rank)
    add(component(TRAIN), train)
    a2a = ph.moe_alltoall_bytes_per_token(stu)
    if a2a > 0:
        add(component(LOGPROB_A2A), samples * seq * a2a * logprob_passes)
        add(component(TRAIN_A2A), samples * seq * a2a * _train_alltoall_passes(inst))
    if cx.offered(inst):  # context parallelism's KV ring (context.py): trained and scored tokens' K and V
        ring = samples * seq * cx.ring_bytes_per_token(stu)
        add(component(CP_TRAIN, CP_ROLLOUT_SEQ), ring * cx.training_passes(inst.training.activation_recompute))
        add(component(CP_LOGPROB, CP_ROLLOUT_SEQ), ring * logprob_passes * d.CP_RING_FORWARD_PASSES_PER_SCORING_PASS)
    if inst.training.cpu_offload:
        # one sequence per GPU and micro-step; the optimiser state moves once per step
        add(component(OFFLOAD_STREAM), samples * ph.offload_stream_bytes_per_sequence(stu, r.lora_rank))
        add(component(OFFLOAD_STATE), r.steps * ph.offload_state_bytes_per_step(stu, r.lora_rank))
    flops["student_train"] = samples * seq * ph.train_flops_per_token(stu, False, r.lora_rank)
    flops["student_train_hardware"] = train
    if inst.environments.latency_seconds_per_step > 0:
        add(component(ENV_WAIT), r.steps * inst.environments.latency_seconds_per_step)

    progress = float(lc.on_policy_progress(task, q, ceiling))
    forgetting = float(lc.on_policy_forgetting(task, q, ceiling, pri.forgetting_share_of_baseline))
    q, forgetting = _adapter_outcomes(inst, r, q, forgetting)
    amounts, q = _environments_and_overlap(inst, r, amounts, samples, q)
    _add_evaluation(inst, r, amounts)
    design = inst.reward.design_usd if r.method == "rl" else 0.0
    data = samples * inst.reward.verifier_usd_per_sample + design if r.method == "rl" else 0.0
    teacher_usd, lead = teacher
    data += teacher_usd
    env, sandboxes = _environments_usd(inst, samples)
    log_gb = samples * task.response_tokens * inst.storage.trajectory_log_share * ph.d.LOG_BYTES_PER_TOKEN / ph.GB
    logs = log_gb * inst.storage.hot_usd_per_gb_month * inst.storage.log_retention_months
    return RecipeProfile(recipe=r, amounts=amounts, flops=flops, samples=samples, data_usd=data,
                         environments_usd=env, log_storage_usd=logs, lead_hours=lead, quality=q,
                         forgetting_points=forgetting, extra={"progress": progress, "log_gb": log_gb,
                                                              "prompts_drawn": drawn, "effective_prompts": effective,
                                                              "sandbox_usd": sandboxes},
                         fixed_data_usd=design + teacher_usd, **_side_money(inst, r, log_gb))


def _add_teacher_scoring(inst: Instance, r: Recipe, samples: float, seq: float, add) -> float:
    r"""An OPD recipe's teacher scoring, :math:`2 N_t` FLOPs per scored token of every sample, each phase's under
    ``component(TEACHER, precision)`` of its own precision (one component for a run at one precision); the FLOPs
    in all. A change of precision between phases reloads the teacher, which is not priced: the optimum of
    ``qwen3-8b-math-teacher-precision-by-phase.json`` changes once (int8 → fp8), Qwen3-32B's 32.8 GB of fp8 weights
    read at ``defaults.CHECKPOINT_WRITE_GB_PER_S_PER_NODE`` (2.0 GB/s per node) take 4.1 s spread over its 4 nodes,
    16.4 s if every node reads all of them, 0.02 % of its 22.4 h (INFERRED; README "Teacher precision per phase")."""
    per_token = ph.forward_flops_per_token(inst.teacher.architecture)
    if not r.teacher_precision_by_phase and not inst.teacher.prefix_caching:
        t = samples * seq * per_token
        add(component(TEACHER, r.teacher_precision), t)
        return t
    total = 0.0
    for tokens, precision in zip(teacher_tokens_by_phase(inst, r), r.teacher_precisions):
        t = tokens * per_token
        add(component(TEACHER, precision), t)
        total += t
    return total


def teacher_tokens_by_phase(inst: Instance, r: Recipe) -> list[float]:
    r"""The tokens an OPD recipe's teacher scores in each sampling phase :math:`j` (:math:`P_j` prompts of
    :math:`k_j` samples, prompts of :math:`t_p` and responses of :math:`t_r` tokens): :math:`P_j k_j (t_p + t_r)`,
    or with ``teacher.prefix_caching`` (the engine's prefix cache: vLLM's automatic prefix caching, SGLang's
    RadixAttention) the prompt once per group, :math:`P_j (t_p + k_j t_r)`."""
    task = inst.task
    phase_prompts = r.steps / inst.training.phases * inst.training.methods["opd"].prompts_per_step
    if inst.teacher.prefix_caching:
        return [phase_prompts * (task.prompt_tokens + k * task.response_tokens) for k in r.samples_per_prompt]
    return [phase_prompts * k * (task.prompt_tokens + task.response_tokens) for k in r.samples_per_prompt]


@functools.lru_cache(maxsize=4096)
def _effective_draws(unique: float, drawn: float, repeat_scale: float) -> float:
    """``learning.effective_draws`` at the point priors, once per (prompts, draws): a length's recipes share it."""
    return float(lc.effective_draws(unique, drawn, repeat_scale))


def _environments_and_overlap(inst: Instance, r: Recipe, amounts: dict, samples: float,
                              quality: float) -> tuple[dict, float]:
    """With pools (``environments.py``), the pool's work in CPU-seconds (1/W seconds each on the choice's pool); then
    each phase's overlap: asynchronous RL (``_asynchronous``), or an agent loop's generation against the pool's
    work; the amounts unchanged otherwise."""
    env = inst.environments
    pooled = bool(env.pools) and env.cpu_seconds_per_sample > 0
    if pooled:
        amounts[component(ENV_CPU)] = amounts.get(component(ENV_CPU), 0.0) + samples * env.cpu_seconds_per_sample
    agent_loop = pooled and env.overlap == "agent_loop"
    if r.staleness_steps:
        return _asynchronous(inst, r, amounts, quality, agent_loop)
    if agent_loop:
        from planopt.models.cost.asynchronous import AGENT_LOOP_MARK, MEMBERS
        return _split_by_phase(inst, r, amounts, AGENT_LOOP_MARK, set().union(*MEMBERS[AGENT_LOOP_MARK].values())), quality
    return amounts, quality


def _environments_usd(inst: Instance, samples: float) -> tuple[float, float]:
    """(the environments' money, of which sandboxes billed per CPU-hour used): without pools the CPU-hours used,
    and the traffic and API calls per sample (``environments.py``)."""
    sandboxes = envs.sandbox_usd(inst.environments, samples)
    traffic = envs.traffic_usd_per_sample(inst.environments)
    return (sandboxes + samples * traffic if traffic else sandboxes), sandboxes


def _asynchronous(inst: Instance, r: Recipe, amounts: dict, quality: float, agent_loop: bool) -> tuple[dict, float]:
    r"""An asynchronous recipe (``asynchronous.py``): each component split by phase under its phase key (``@q`` with
    an agent loop on a pool of environment workers, else ``@p``), and :math:`q = q_0 + (1 - \delta_m)^s (q - q_0)`,
    :math:`\delta_m` RL's or OPD's (``Priors.staleness_loss``)."""
    from planopt.models.cost.asynchronous import ASYNC_AGENT_LOOP_MARK, PHASE_MARK, gain_kept
    out = _split_by_phase(inst, r, amounts, ASYNC_AGENT_LOOP_MARK if agent_loop else PHASE_MARK)
    q0 = inst.task.baseline_score
    return out, float(q0 + gain_kept(inst.priors.staleness_loss(r.method), r.staleness_steps) * (quality - q0))


def _split_by_phase(inst: Instance, r: Recipe, amounts: dict, mark: str, families: set | None = None) -> dict:
    """Each component (of ``families``; None: every one) split by sampling phase under its phase key of ``mark``:
    per-step work by the phase's steps, per-sample work by its samples, decode by its samples per prompt, an OPD
    teacher's scoring at one precision by the samples of the phases scored at it; the other components
    unchanged."""
    from planopt.models.cost.asynchronous import phase_key
    phases = inst.training.phases
    per_step = {TAIL, SYNC, OFFLOAD_STATE, ENV_WAIT}
    share = [k / sum(r.samples_per_prompt) for k in r.samples_per_prompt]        # each phase's share of the samples
    precisions = r.teacher_precisions
    # an OPD teacher's work per phase: its samples, or with a prefix cache its scored tokens (teacher_tokens_by_phase)
    scored = teacher_tokens_by_phase(inst, r) if r.method == "opd" and inst.teacher.prefix_caching else r.samples_per_prompt
    out: dict[str, float] = {}
    for key, amount in amounts.items():
        fam = family_of(key)
        if families is not None and fam not in families:
            out[key] = out.get(key, 0.0) + amount
            continue
        for p, k in enumerate(r.samples_per_prompt):
            if fam == DECODE:
                if int(key.split("|")[2]) != k:
                    continue
                part = amount / r.samples_per_prompt.count(k)   # phases of one k decode alike
            elif fam == TEACHER:  # the phases scored at this key's precision, by their samples (one: every phase)
                mine = key.split("|")[1]
                if precisions[p] != mine:
                    continue
                part = amount * scored[p] / sum(w for w, q in zip(scored, precisions) if q == mine)
            else:
                part = amount / phases if fam in per_step else amount * share[p]
            out[phase_key(key, p, mark)] = out.get(phase_key(key, p, mark), 0.0) + part
    return out


def _adapter_outcomes(inst: Instance, r: Recipe, quality: float, forgetting: float) -> tuple[float, float]:
    """Full fine-tuning's quality and forgetting, or LoRA's shares of them (``learning.lora_outcomes``)."""
    if r.lora_rank is None:
        return quality, forgetting
    pri = inst.priors
    q, f = lc.lora_outcomes(inst.task.baseline_score, quality, forgetting, getattr(pri.lora_gain_share, r.method),
                            getattr(pri.lora_forgetting_share, r.method))
    return float(q), float(f)


def evaluation_runs(inst: Instance, r: Recipe) -> int:
    r"""Validation runs of a recipe: :math:`\lfloor \text{steps} / \text{every} \rfloor` (none when ``every_steps`` is null)."""
    every = inst.evaluation.every_steps
    return 0 if every is None else r.steps // every


def _add_evaluation(inst: Instance, r: Recipe, amounts: dict) -> None:
    r"""Eval-set tokens decoded: runs :math:`\times` prompts :math:`\times` mean response tokens, one sample per prompt."""
    runs = evaluation_runs(inst, r)
    if runs > 0:
        amounts[component(EVAL)] = runs * inst.evaluation.prompts * inst.task.response_tokens


def _side_money(inst: Instance, r: Recipe, log_gb: float) -> dict:
    r"""Checkpoint size and the money beside GPU time that the recipe sets:

    .. math::
       \mathrm{ingest} = G_{log}\, p_{ingest}, \qquad
       \mathrm{egress} = p_{egress} \big([\text{weights}]\, W + [\text{logs}]\, G_{log}
                          + [\text{milestones}]\, m\, C\big)

    with :math:`W` the trained weights (or adapter) in bf16, :math:`C` one checkpoint,
    :math:`m` the milestones kept; each bracket is 1 when ``network.crosses_region`` lists it."""
    ckpt_gb = ph.checkpoint_bytes(inst.student, r.lora_rank) / ph.GB
    net = inst.network
    once = (("final_weights" in net.crosses_region) * ph.handover_bytes(inst.student, r.lora_rank) / ph.GB
            + ("milestones" in net.crosses_region) * inst.checkpointing.milestones_kept * ckpt_gb)
    crossing = once + ("trajectory_logs" in net.crosses_region) * log_gb
    return {"checkpoint_gb": ckpt_gb, "network_usd": crossing * net.egress_usd_per_gb,
            "log_ingest_usd": log_gb * inst.storage.log_ingest_usd_per_gb, "fixed_network_usd": once * net.egress_usd_per_gb}


def profile(inst: Instance, r: Recipe, teacher: tuple[float, float] = (0.0, 0.0)) -> RecipeProfile:
    """The hardware-independent profile of a recipe; ``teacher``: an OPD recipe's money and lead hours of obtaining
    its teacher (``teacher_training.teacher_lump``: a lump, or a trained teacher's plan)."""
    out = _sft_profile(inst, r) if r.method == "sft" else _on_policy_profile(inst, r, teacher)
    return _with_pretraining(inst, out) if r.pretraining_tokens else out


def _with_pretraining(inst: Instance, p: RecipeProfile) -> RecipeProfile:
    """A recipe's profile with its continued pre-training (``pretraining.py``): its FLOPs as serial training work,
    its corpus in the data money, and the stage's score and forgetting from the score the tokens reach
    (``stage_outcomes.stage_outcome`` from the baseline, which applies them)."""
    from planopt.models.cost.stage_outcomes import stage_outcome
    r = p.recipe
    quality, forgetting = stage_outcome(inst, r, inst.task.baseline_score)
    corpus = pt.data_usd(inst, r.pretraining_tokens)
    flops = {**p.flops, "pretraining": pt.model_flops(inst.student, r.pretraining_tokens),
             "pretraining_hardware": pt.pretrain_flops(inst.student, r.pretraining_tokens, inst.training.activation_recompute)}
    extra = {**p.extra, "pretraining_tokens": r.pretraining_tokens, "pretraining_usd": corpus,
             "pretraining_start": float(pt.start_score(inst, r.pretraining_tokens, inst.task.baseline_score))}
    return replace(p, amounts={**p.amounts, **pt.amounts(inst, r)}, flops=flops, data_usd=p.data_usd + corpus,
                   quality=quality, forgetting_points=forgetting, extra=extra)
