r"""Hardware choices: what each (GPU type, count) costs, holds and how fast it works.

For every work component of ``recipes.py`` this module gives the wall seconds
one unit of it takes on a hardware choice :math:`h = (g, n)`, so that a
recipe's compute time on :math:`h` is linear in its amounts:

.. math:: T(r, h) = \sum_c \mathrm{amount}_c(r) \cdot u_c(h)

- decode tokens at :math:`k` samples per prompt: the replica batch is
  :math:`b = \min(b_{max}, B k / \mathrm{replicas})` and
  :math:`u = t_{step}(b) / (b \cdot \mathrm{replicas})`;
- per step, the tail (the step waits for the longest response):
  :math:`(R_{max} - \bar R)\, t_{step}(1)`, and the weight hand-over
  :math:`W / (tp \cdot \min(\mathrm{link}, \beta_{refit}))` (:math:`W` the adapter's
  bytes for a LoRA class);
- validation decode tokens: as decode, at the replica batch
  :math:`\min(b_{max}, P_{eval}/\mathrm{replicas})`;
- FLOPs: :math:`1 / (n \cdot \mathrm{peak}_p \cdot \mathrm{MFU})`;
- expert-parallel all-to-all bytes (MoE students): :math:`1 / (n \cdot \beta_{a2a})`,
  :math:`\beta_{a2a}` the scale-out link across nodes, one direction of the
  scale-up link inside one; a decode iteration also pays the tensor-parallel
  all-reduces (``physics.tp_decode_allreduce_seconds``);
- environment waits: one second per second; environment work on the choice's pool of workers
  (``environments.py``): :math:`1/W` seconds per CPU-second, :math:`W` its workers;
- on a split choice (separate rollout GPUs, ``rollout.py``), decode, tail,
  prefill and validation decodes as above on the rollout GPUs (their own
  tensor-parallel size, the engine in ``DEDICATED_ROLLOUT_HBM_SHARE`` of their
  HBM), and the hand-over over the network, ``physics.split_weight_transfer_seconds``;
- SFT attention FLOPs as FLOPs; FSDP collective bytes
  :math:`(n-1)/(n^2 \cdot \mathrm{link})`; CPU-offload bytes over the host link,
  :math:`1/(n^2 \beta_{host})` per micro-step stream and :math:`1/(n \beta_{host})`
  per optimiser step (``physics``; on a DeepSpeed trainer the optimiser step is host CPU time,
  ``physics.host_optimizer_seconds_per_state_byte``); zero on a choice that does not offload
  (:func:`offloads`), so every recipe carries the offload amounts and only an
  offloading choice pays them.

CPU offload as a decision (``training.cpu_offload: "if_needed"``): next to each
(GPU, count, adapter) choice on a GPU with a known host link, an offloading twin
is offered when some memory class fits only with offload, and on that twin a
class fits only if it does not fit without offload. So a plan offloads exactly
when its training state fits its GPUs no other way (issue 9, item 6), and the
space grows only where offload is the one way to run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from planopt.models.cost import context
from planopt.models.cost import environments as envs
from planopt.models.cost import physics as ph
from planopt.models.cost import rollout
from planopt.models.cost import trainer as tr
from planopt.models.catalog import GpuSpec
from planopt.models.catalog.prices import PriceRow
from dataclasses import replace

from planopt.models.schema.plan import HardwareChoice, split_class, staleness_of_class
from planopt.models.cost.asynchronous import staleness_options
from planopt.models.cost.components import (ATTN, CP_LOGPROB, CP_SFT_SEQ, CP_TRAIN, DECODE, ENV_CPU, ENV_WAIT, EVAL, FSDP, LOGPROB_A2A, OFFLOAD_STATE, OFFLOAD_STREAM, PREFILL, REWARD_MODEL,
                      STUDENT_FWD, SYNC, TAIL, TEACHER, TRAIN, TRAIN_A2A, adapter_ranks, family_of, sft_sequence_tokens,
                      sft_shape)
from planopt.models.schema.instance import GpuOption, Instance


def option_of(inst: Instance, gpu: str) -> GpuOption | None:
    """The instance's GPU option whose key is ``gpu``, or None."""
    return next((o for o in inst.hardware.gpus if o.key == gpu), None)


def tier_of(inst: Instance, option: GpuOption) -> str:
    """An entry's pricing tier: its own, else ``hardware.pricing``'s (``either`` has given every entry its own)."""
    return option.tier or ("on_demand" if inst.hardware.pricing == "either" else inst.hardware.pricing)


def offer_of(inst: Instance, option: GpuOption, count: int | None = None) -> PriceRow | None:
    """The price catalog's offer an entry's ``count`` GPUs are bought from (its smallest count when None):
    its provider's at its tier, else under ``hardware.offers: catalog`` the cheapest offer of its type and tier
    that holds the count (``prices.cheapest_offer``, exact), among ``hardware.price_rows`` (``hardware.price_catalog``'s
    offers, else the shipped catalog's); None for the instance's own price or a reference price."""
    from planopt.models.catalog.prices import cheapest_offer, offers
    tier, rows = tier_of(inst, option), inst.hardware.price_rows()   # the price file's, else the shipped catalog's
    if option.provider is not None:
        return offers(option.provider, option.name, option.region, rows).get(tier)
    if option.price_usd_per_gpu_hour is not None or inst.hardware.offers != "catalog":
        return None
    return cheapest_offer(option.name, tier, min(option.counts) if count is None else count, rows)


def price_usd_per_gpu_hour(inst: Instance, option: GpuOption, count: int | None = None) -> float | None:
    """What one of ``count`` GPUs of an entry costs per hour (its smallest count when None): the instance's
    price, else its catalog offer's (:func:`offer_of`), else under ``hardware.offers: reference`` gpus.json's
    price of its tier; None when there is none."""
    if option.price_usd_per_gpu_hour is not None:
        return option.price_usd_per_gpu_hour
    if inst.hardware.offers == "catalog":
        row = offer_of(inst, option, count)
        return None if row is None else row.usd_per_gpu_hour
    spec = option.spec()
    return spec.price_spot_usd_per_gpu_hour if tier_of(inst, option) == "spot" else spec.price_on_demand_usd_per_gpu_hour


def unheld_counts(inst: Instance) -> list[str]:
    """The (entry, counts) no price holds, left out of the plan space: under ``hardware.offers: catalog``, counts
    no catalog offer of the entry's type and tier holds (an ethernet-only offer holds one node; a tier the type
    is not sold at), e.g. ``"hardware.gpus.5: L40S × 8, 16 (no on-demand offer holds them)"``."""
    out = []
    for field in ("gpus", "rollout_gpus"):
        for n, option in enumerate(getattr(inst.hardware, field)):
            missing = sorted(c for c in set(option.counts) if price_usd_per_gpu_hour(inst, option, c) is None)
            if missing:
                tier = tier_of(inst, option).replace("_", "-")
                out.append(f"hardware.{field}.{n}: {option.key} × {', '.join(map(str, missing))} "
                           f"(no {tier} offer in the price catalog holds them)")
    return out


def plan_offers(inst: Instance, plan) -> list[dict]:
    """Where a plan's GPUs are bought: per stage (``stage``, 1-based), its training GPUs and any separate rollout
    GPUs (``role``), each with its count, tier, $/GPU-hour and the offer behind the price (provider, region,
    node size, interconnect, date and source; ``provider`` None for the instance's own or a reference price)."""
    out = []
    rollout = {o.key: o for o in inst.hardware.rollout_gpus}
    for n, stage in enumerate(plan.stages, start=1):
        h = stage.hardware
        sets = [("training", option_of(inst, h.gpu), h.count)]
        if h.split:
            sets.append(("rollout", rollout.get(h.rollout_gpu), h.rollout_count))
        for role, option, count in sets:
            if option is None:
                continue
            row = offer_of(inst, option, count)
            source = ("the instance's price" if option.price_usd_per_gpu_hour is not None and option.provider is None
                      else "gpus.json reference price" if row is None else row.source)
            out.append({"stage": n, "role": role, "gpu": option.key, "count": count, "tier": tier_of(inst, option),
                        "usd_per_gpu_hour": price_usd_per_gpu_hour(inst, option, count),
                        "provider": None if row is None else row.provider, "region": None if row is None else row.region,
                        "node_gpus": None if row is None else row.node_gpus,
                        "interconnect": None if row is None else row.interconnect,
                        "as_of": option.spec().as_of if row is None else row.as_of, "source": source})
    return out


def spot_reclaims_per_hour(inst: Instance, option: GpuOption | None, count: int) -> float:
    r"""Expected reclaims per hour of a gang of ``count`` GPUs of an entry bought at spot:
    :math:`\lceil n / g_{node} \rceil \cdot \lambda_{node}`, :math:`\lambda_{node} = -\ln(1-q)/730` for the reclaimed
    share per month :math:`q` (``reliability.spot_reclaimed_share_per_month``, AWS Spot Instance Advisor;
    ``defaults.spot_reclaims_per_node_hour``), :math:`g_{node}` the offer's GPUs per node (else the type's); 0 at
    on-demand. A gang stops when any of its nodes is reclaimed, as it does when one GPU fails."""
    from planopt.models.catalog.defaults import spot_reclaims_per_node_hour
    if option is None or count == 0 or tier_of(inst, option) != "spot":
        return 0.0
    row = offer_of(inst, option, count)
    node = row.node_gpus if row is not None else (option.spec().gpus_per_node or 1)
    return math.ceil(count / node) * spot_reclaims_per_node_hour(inst.reliability.spot_reclaimed_share_per_month)


def hardware_options(inst: Instance) -> list[HardwareChoice]:
    """(GPU, count, adapter) within availability and with a price, in a stable order: one
    choice per adapter the instance offers (``plan.py``: the adapter sets the checkpoint), each once per
    trainer of ``training.trainer_options`` (``trainer.py``), and once per pool of environment workers a stage
    may name (``environments.pools_of``)."""
    keys = inst.training.trainer_keys()
    pools = envs.pools_of(inst, inst.training.methods)
    mode = inst.training.cpu_offload
    classes = memory_classes(inst) if mode == "if_needed" else []
    out = []
    rollouts = rollout.rollout_choices(inst, price_usd_per_gpu_hour)
    for lora in adapter_ranks(inst):
        for o in inst.hardware.gpus:
            for n in sorted(set(o.counts)):
                if price_usd_per_gpu_hour(inst, o, n) is None:
                    continue  # a count no catalog offer holds: left out, and listed by `validate` (unheld_counts)
                if o.available_gpus is None or n <= o.available_gpus:
                    offload = mode is True
                    # colocated, then split choices (``rollout.py``): the same training GPUs plus each rollout set
                    pairs = [(None, 0)] + [(g, k) for g, k in rollouts if rollout.pair_allowed(inst, o.key, n, g, k)]
                    choices = [HardwareChoice(o.key, n, lora, g, k, cpu_offload=offload, trainer=key, context_parallel=cp,
                                              environment_pool=pool)
                               for g, k in pairs for key in keys for cp in context.degrees_for(inst, n) for pool in pools]
                    for base in choices:
                        out.append(base)
                        if classes and ph.host_link_gb_per_s(o.spec()) is not None:
                            twin = HardwareProfile(inst, replace(base, cpu_offload=True))
                            if any(twin.fits(c) for c in classes):
                                out.append(twin.choice)
    return out


def offloads(inst: Instance, choice: HardwareChoice) -> bool:
    """Whether a choice runs with the training state in host memory: always under
    ``training.cpu_offload: true``, as the choice says under ``"if_needed"``, never under false."""
    mode = inst.training.cpu_offload
    return mode is True or (mode == "if_needed" and choice.cpu_offload)


def memory_classes(inst: Instance) -> list[str]:
    """The memory classes a plan of the instance can fall in: per adapter, each method (OPD per teacher precision,
    asynchronous RL and OPD per staleness above 0)."""
    classes = []
    for lora in adapter_ranks(inst):
        suffix = "" if lora is None else f"+lora{lora}"
        for m in inst.training.methods:
            stale = [f"@s{s}" for s in staleness_options(inst, m) if s]
            if m == "opd":  # per precision, and asynchronous OPD at each staleness above 0 (asynchronous.py)
                classes.extend(f"opd:{p}{s}{suffix}" for p in sorted(set(inst.teacher.precision_options))
                               for s in [""] + stale)
            else:
                classes.append(m + suffix)
                if m == "rl":  # asynchronous RL at each staleness above 0 (asynchronous.py)
                    classes.extend(f"rl{s}{suffix}" for s in stale)
    return classes


@dataclass(frozen=True)
class HardwareProfile:
    """What a hardware choice costs and holds on one instance: prices, checkpoint and failure rates, memory, seconds
    per unit of work."""

    inst: Instance
    choice: HardwareChoice

    @cached_property
    def gpu(self) -> GpuSpec:
        """The training GPUs' spec."""
        return option_of(self.inst, self.choice.gpu).spec()

    @property
    def count(self) -> int:
        """The number of training GPUs."""
        return self.choice.count

    @cached_property
    def price_usd_per_gpu_hour(self) -> float:
        """The training GPU's price per GPU-hour (instance override, else the catalog's for the pricing tier)."""
        return price_usd_per_gpu_hour(self.inst, option_of(self.inst, self.choice.gpu), self.count)

    @cached_property
    def offer(self) -> PriceRow | None:
        """The price catalog's offer the training GPUs are bought from (None: the instance's or a reference price)."""
        return offer_of(self.inst, option_of(self.inst, self.choice.gpu), self.count)

    @cached_property
    def rollout_option(self) -> GpuOption | None:
        """The instance's rollout GPU option of a split choice (None when colocated)."""
        return None if not self.choice.split else \
            next(o for o in self.inst.hardware.rollout_gpus if o.key == self.choice.rollout_gpu)

    @cached_property
    def rollout_gpu(self) -> GpuSpec | None:
        """The separate rollout GPUs' spec (None when colocated)."""
        return None if self.rollout_option is None else self.rollout_option.spec()

    @cached_property
    def usd_per_hour_of_gpus(self) -> float:
        r""":math:`n p_g` (+ :math:`n_r p_{g_r}` for separate rollout GPUs): what the choice's GPUs cost per hour."""
        own = self.count * self.price_usd_per_gpu_hour
        if self.rollout_option is None:
            return own
        return own + self.choice.rollout_count * price_usd_per_gpu_hour(self.inst, self.rollout_option,
                                                                        self.choice.rollout_count)

    @cached_property
    def nodes(self) -> int:
        """The nodes the choice holds: its training GPUs' and any separate rollout GPUs'."""
        split = 0 if self.rollout_gpu is None else ph.nodes(self.rollout_gpu, self.choice.rollout_count)
        return ph.nodes(self.gpu, self.count) + split

    @cached_property
    def environment_pool(self):
        """The pool of environment workers the choice names (``environments.pools``), or None."""
        name = self.choice.environment_pool
        return None if name is None else self.inst.environments.pool(name)

    @cached_property
    def environments_usd_per_hour(self) -> float:
        r""":math:`w\, p_w + p_{fix}`: what the choice's pool of environment workers costs per hour it is held
        (``environments.usd_per_hour``; 0 without one or for a gpu_host pool)."""
        return envs.usd_per_hour(self.environment_pool, self.nodes)

    @cached_property
    def checkpoint_write_hours(self) -> float:
        r""":math:`w = 14 N / (\mathrm{bw}_{node} \cdot \mathrm{nodes})` (:math:`14 N_{LoRA}` for an adapter)."""
        bw = self.inst.reliability.checkpoint_write_gb_per_s_per_node * ph.GB * ph.nodes(self.gpu, self.count)
        return ph.checkpoint_bytes(self.inst.student, self.choice.lora_rank) / bw / 3600.0

    @cached_property
    def checkpoint_gb(self) -> float:
        """One resumable checkpoint of this choice's adapter (full state or the adapter's), GB."""
        return ph.checkpoint_bytes(self.inst.student, self.choice.lora_rank) / ph.GB

    @cached_property
    def failures_per_hour(self) -> float:
        r"""Job failure rate :math:`\lambda = (n + n_r) \cdot \lambda_{GPU} + \lambda_{spot}` (Llama 3 interruptions;
        :math:`n_r` the separate rollout GPUs, 0 when colocated: a synchronous step stops when any GPU fails;
        :math:`\lambda_{spot}` the spot reclaims, :attr:`spot_reclaims_per_hour`)."""
        return self.choice.total_count * self.inst.reliability.failures_per_gpu_hour + self.spot_reclaims_per_hour

    @cached_property
    def spot_reclaims_per_hour(self) -> float:
        """Expected spot reclaims per hour of the choice's gangs (training and separate rollout GPUs, each at its
        entry's tier; :func:`spot_reclaims_per_hour`): failures of the job like any other."""
        own = spot_reclaims_per_hour(self.inst, option_of(self.inst, self.choice.gpu), self.count)
        return own + spot_reclaims_per_hour(self.inst, self.rollout_option, self.choice.rollout_count)

    @property
    def restart_hours(self) -> float:
        """Hours a restart after a failure takes (``reliability.restart_minutes``)."""
        return self.inst.reliability.restart_minutes / 60.0

    def overhead_share(self, interval_minutes: float) -> float:
        """Expected extra wall time per hour of useful work from checkpoint writes, failures and restarts at an
        interval of ``interval_minutes`` (``physics.checkpoint_overhead_share``)."""
        return ph.checkpoint_overhead_share(self.checkpoint_write_hours, self.failures_per_hour,
                                            interval_minutes / 60.0, self.restart_hours)

    # --- memory ------------------------------------------------------------
    def _train_seq_tokens(self, method: str) -> float:
        t = self.inst.task
        return sft_sequence_tokens(self.inst) if method == "sft" else t.prompt_tokens + t.max_response_tokens

    @cached_property
    def rollout_efficiency(self):
        """Efficiency settings of the rollout engine: the instance's, or with the dedicated HBM share when split."""
        return self.inst.efficiency if not self.choice.split else rollout.dedicated_efficiency(self.inst.efficiency)

    @property
    def rollout_gpus(self) -> tuple[GpuSpec, int]:
        """The GPUs that generate, and how many: the training GPUs, or the separate rollout set."""
        return (self.gpu, self.count) if not self.choice.split else (self.rollout_gpu, self.choice.rollout_count)

    @cached_property
    def rollout_tp(self) -> int | None:
        """Tensor-parallel size of the rollout engine (the most throughput when split, else the smallest that fits);
        None when none fits."""
        gpu, n = self.rollout_gpus
        if self.choice.split:  # an engine on GPUs of its own: the size of most throughput (rollout.py)
            t = self.inst.task
            return rollout.dedicated_tensor_parallel(self.inst.student, gpu, n, self.rollout_efficiency,
                                                     rollout.longest_sequence_tokens(self.inst),
                                                     t.prompt_tokens + t.response_tokens / 2.0)
        return ph.rollout_tensor_parallel(self.inst.student, gpu, n, self.rollout_efficiency,
                                          rollout.longest_sequence_tokens(self.inst))

    def memory_bytes_per_gpu(self, memory_class: str) -> tuple[float, str | None]:
        """Peak bytes per GPU over the phases of a step, and why it does not fit (None if it does)."""
        inst, gpu, n = self.inst, self.gpu, self.count
        method, precision, lora = split_class(memory_class)
        if lora != self.choice.lora_rank:
            return 0.0, (f"the class trains {'LoRA rank ' + str(lora) if lora else 'full weights'}, this choice "
                         f"checkpoints {'LoRA rank ' + str(self.choice.lora_rank) if self.choice.lora_rank else 'full weights'}")
        if inst.training.cpu_offload == "if_needed" and self.choice.cpu_offload \
                and HardwareProfile(inst, replace(self.choice, cpu_offload=False)).fits(memory_class):
            return 0.0, "fits without CPU offload (training.cpu_offload: \"if_needed\" offloads only a job that fits no other way)"
        options = inst.training.methods.get(method)
        if options is not None and not options.allows(self.choice.gpu, n):  # training.methods.<m>.gpus
            return 0.0, f"training.methods.{method}.gpus: {method} does not train on {n} × {self.choice.gpu}"
        idle = envs.refusal(inst, self.choice.environment_pool, method)
        if idle is not None:  # a pool only for on-policy recipes, and one for each of them (environments.py)
            return 0.0, idle
        seq = self._train_seq_tokens(method) / self.choice.context_parallel  # each GPU holds s/c (context.py)
        limit = inst.efficiency.train_hbm_share * gpu.hbm_gb * ph.GB
        peak = ph.train_memory_bytes_per_gpu(inst.student, n, seq, offloads(inst, self.choice), lora,
                                             tr.zero_stage(self.choice.trainer))
        if peak > limit:
            return peak, f"training state {peak / ph.GB:.0f} GB/GPU > {limit / ph.GB:.0f} GB usable"
        if staleness_of_class(memory_class) and not self.choice.split:
            return 0.0, f"asynchronous {method.upper()} overlaps generation with training: it needs separate rollout GPUs"
        if method == "sft":
            if self.choice.split:
                return peak, "SFT generates nothing: separate rollout GPUs would sit idle"
            return peak, None
        if self.rollout_tp is None:
            return peak, "rollout engine cannot hold the student's weights and one longest sequence's KV cache"
        engine_gpu = self.rollout_gpus[0]
        peak = max(peak, self.rollout_efficiency.rollout_hbm_share * engine_gpu.hbm_gb * ph.GB)
        frozen = []
        if method == "opd":
            frozen.append((inst.teacher.architecture, precision, "teacher"))
        if method == "rl" and inst.reward.reward_model is not None:
            frozen.append((inst.reward.reward_model, "bf16", "reward model"))
        for arch, precision, what in frozen:
            m = ph.sharded_forward_memory_bytes_per_gpu(arch, precision, n, seq)
            if m > limit:
                return m, f"{what} weights {m / ph.GB:.0f} GB/GPU > {limit / ph.GB:.0f} GB usable"
            peak = max(peak, m)
        return peak, None

    def fits(self, memory_class: str) -> bool:
        """True when ``memory_class`` fits in the GPUs' memory."""
        return self.memory_bytes_per_gpu(memory_class)[1] is None

    # --- time per unit of work ------------------------------------------------
    def seconds_per_unit(self, key: str) -> float:
        """Wall seconds one unit of component ``key`` takes on this hardware."""
        fam, parts = family_of(key), key.split("|")
        if fam == ENV_WAIT:  # a serial wait: one second per second
            return 1.0
        if fam == ENV_CPU:  # the pool's workers kept busy: 1/W s per CPU-second (environments.py)
            pool = self.environment_pool
            return 0.0 if pool is None else envs.seconds_per_cpu_second(pool, self.nodes)
        seconds = self._seconds_per_unit_off_engine(fam, parts)
        return seconds if seconds is not None else self._seconds_per_unit_on_engine(key, fam, parts)

    def _seconds_per_unit_off_engine(self, fam: str, parts: list[str]) -> float | None:
        """:meth:`seconds_per_unit` of a component the rollout engine does not decode (training GPUs' compute,
        collectives, offload traffic, environment waits, a split choice's prefill and weight transfer); None for
        the engine's own (evaluation, decode, tail, a colocated weight sync)."""
        inst, gpu, n, eff = self.inst, self.gpu, self.count, self.inst.efficiency
        key = self.choice.trainer
        if fam == STUDENT_FWD:
            return ph.compute_seconds(1.0, inst.student, gpu, n, eff) / tr.forward_speed(key)
        if fam == PREFILL and not self.choice.split:  # the rollout engine's prefill: no trainer pass
            return ph.compute_seconds(1.0, inst.student, gpu, n, eff)
        if fam in (TRAIN, ATTN):
            return ph.compute_seconds(1.0, inst.student, gpu, n, eff) / tr.train_speed(key)
        if fam == FSDP:
            return self._collective_seconds_per_byte
        if fam in (OFFLOAD_STREAM, OFFLOAD_STATE):
            return self._offload_seconds_per_byte(fam)
        if fam == TEACHER:
            return ph.compute_seconds(1.0, inst.teacher.architecture, gpu, n, eff, parts[1]) / tr.forward_speed(key)
        if fam == REWARD_MODEL:
            return ph.compute_seconds(1.0, inst.reward.reward_model, gpu, n, eff) / tr.forward_speed(key)
        if fam in (CP_TRAIN, CP_LOGPROB):  # the KV ring beyond what attention hides (context.py)
            t = inst.task
            seq = sft_shape(inst).context_tokens if parts[1] == CP_SFT_SEQ else t.prompt_tokens + t.response_tokens
            return context.ring_seconds_per_byte(inst.student, gpu, n, self.choice.context_parallel, seq, eff)
        if fam in (TRAIN_A2A, LOGPROB_A2A):
            return ph.alltoall_seconds(1.0, gpu, n)
        if fam == PREFILL and self.choice.split:
            return ph.compute_seconds(1.0, inst.student, *self.rollout_gpus, eff)
        if fam == SYNC and self.choice.split:
            return ph.split_weight_transfer_seconds(inst.student, gpu, self.rollout_gpu, split_class(parts[1])[2])
        return None

    def _offload_seconds_per_byte(self, fam: str) -> float:
        """Seconds per byte of CPU offload's traffic: the per-micro-step stream and the optimiser state over the host
        link, or, on a trainer that updates the state on the host (DeepSpeed), the host's optimiser step; zero on a
        choice that does not offload."""
        inst, gpu, n = self.inst, self.gpu, self.count
        if not offloads(inst, self.choice):
            return 0.0
        if fam == OFFLOAD_STREAM:
            return ph.offload_stream_seconds_per_byte(gpu, n)
        if tr.host_optimizer(self.choice.trainer):
            return ph.host_optimizer_seconds_per_state_byte(gpu, n)
        return ph.offload_state_seconds_per_byte(gpu, n)

    @cached_property
    def _collective_seconds_per_byte(self) -> float:
        """Seconds per byte of ZeRO-3's per-micro-step collectives on this choice's trainer
        (``trainer.collective_seconds_per_byte``): in series, or the part a micro-step's compute does not hide."""
        inst, key = self.inst, self.choice.trainer
        per_byte = ph.fsdp_seconds_per_byte(self.gpu, self.count)
        if not tr.efficiency(key)["overlap"] or inst.sft_data is None:
            return tr.collective_seconds_per_byte(key, per_byte, 0.0, 1.0)
        stu, recompute, lora = inst.student, inst.training.activation_recompute, self.choice.lora_rank
        shape = sft_shape(inst)
        flops = shape.microbatch_tokens * (ph.train_flops_per_token(stu, recompute, lora)
                                           + ph.attention_flops_per_token(stu, shape.context_tokens, recompute))
        # judged at the curve's MFU (mfu_factor 1): the hidden share, like every collective's time, does not move
        # with the MFU factor a pilot fit or a scenario sets (recipes.RATE_FACTOR: FSDP scales with neither)
        nominal = inst.efficiency.model_copy(update={"mfu_factor": 1.0})
        flop_seconds = flops * ph.compute_seconds(1.0, stu, self.gpu, self.count, nominal) / tr.train_speed(key)
        return tr.collective_seconds_per_byte(key, per_byte, flop_seconds, ph.fsdp_bytes_per_sequence(stu, lora))

    def _seconds_per_unit_on_engine(self, key: str, fam: str, parts: list[str]) -> float:
        """:meth:`seconds_per_unit` of what the rollout engine decodes: an evaluation prompt, a decode step's
        share, a response's tail, a colocated weight sync; KeyError for any other ``key``."""
        inst = self.inst
        # generation runs on the rollout GPUs (the training GPUs when colocated), its engine in their HBM share
        gpu, n = self.rollout_gpus
        eff = self.rollout_efficiency
        task, tp = inst.task, self.rollout_tp
        # A sequence still decoding has, on average, half its response behind it.
        live_context = task.prompt_tokens + task.response_tokens / 2.0
        if fam == EVAL:
            tp = tp or n  # a choice that holds no rollout engine (SFT only): the whole job decodes as one group
            replicas = n / tp
            batch = min(ph.max_decode_batch(inst.student, gpu, tp, live_context, eff), max(1.0, inst.evaluation.prompts / replicas))
            return ph.decode_step_seconds(inst.student, gpu, tp, batch, live_context, eff) / (batch * replicas)
        replicas = n / tp
        if fam == DECODE:
            method, k = split_class(parts[1])[0], int(parts[2])
            per_replica = inst.training.methods[method].prompts_per_step * k / replicas
            batch = min(ph.max_decode_batch(inst.student, gpu, tp, live_context, eff), max(1.0, per_replica))
            return ph.decode_step_seconds(inst.student, gpu, tp, batch, live_context, eff) / (batch * replicas)
        if fam == TAIL:
            tail_tokens = task.max_response_tokens - task.response_tokens
            return tail_tokens * ph.decode_step_seconds(inst.student, gpu, tp, 1.0, live_context, eff)
        if fam == SYNC:
            return ph.weight_sync_seconds(inst.student, self.gpu, self.count, tp, split_class(parts[1])[2])
        raise KeyError(key)


def offload_refusal(inst: Instance, choice: HardwareChoice, options: set[HardwareChoice], where: str = "plan") -> None:
    """Raise ValueError naming ``{where}.cpu_offload`` when ``choice`` is not among ``options`` but its
    twin with the other offload is: the plan's offload is what the instance does not allow."""
    if replace(choice, cpu_offload=not choice.cpu_offload) not in options:
        return
    mode = inst.training.cpu_offload
    if mode is True:
        why = "training.cpu_offload is true, so every plan offloads; expected true"
    elif mode is False:
        why = "training.cpu_offload is false, so no plan offloads; expected false"
    else:
        why = (f"{choice.count} × {choice.gpu} holds the training state without offload, and training.cpu_offload "
               "\"if_needed\" offloads only a job that fits no other way; expected false")
    raise ValueError(f"{where}.cpu_offload: {why}")
