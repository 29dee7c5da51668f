r"""The uncertainty model: which defaults are uncertain, how much, and what moves together.

A *parameter* is an instance field whose value is an estimate (achieved MFU
and decode speed, learning-curve scales and ceilings, forgetting shares and
the mix exponent, failures per GPU-hour, restart time, checkpoint write
bandwidth, and prices where the instance gives a range). Each has a
log-normal distribution given by a P10–P90 range from ``spreads.py`` (with
its source there), or by the instance's own ``uncertainty`` entry:

.. math:: v = m \, e^{\sigma z}, \qquad m = \sqrt{\ell h}, \qquad
          \sigma = \frac{\ln(h/\ell)}{2\, \Phi^{-1}((1 + c)/2)}

for a range :math:`[\ell, h]` of central probability :math:`c` (0.8 for a
P10–P90 range). Parameters of one *group* share the standard normal
:math:`z` of a scenario (drawn together): MFU and decode speed, which whole
step times cannot tell apart. A scenario is one value per parameter; the
evaluator stays deterministic, so a scenario's metrics are the evaluator's
metrics on the instance with those values (``apply``), and
``scenarios.py`` computes the same thing for many scenarios at once.

Rules the sources leave open, decided here:

- A factor range (``spreads.FACTOR_*``) multiplies the instance's value,
  whatever it is. An absolute range (``spreads.ABSOLUTE_*``) describes the
  quantity itself and applies only while the instance leaves the field at
  its default: a value the user set is the user's measurement and is a
  point value, unless ``uncertainty`` gives it a range.
- Prices have no default spread: the catalog's low and high prices are
  different providers, which a user chooses, not uncertainty about one
  provider's price. An instance may give a price range
  (``hardware.<GPU>.price_usd_per_gpu_hour``) for an entry with a price of
  its own (or a provider's); a catalog offer's price depends on the count
  (``hardware.offers``) and is a point.
- Spot reclaims (``reliability.spot_reclaimed_share_per_month``) are drawn
  from the AWS Spot Instance Advisor's ranges where an entry is bought at spot.
- ``releases.sft_labels_rebuilt_share`` (repeated releases, ``cost/releases.py``) has no default spread (no
  published rate of label churn); an instance may give it a range.
- ``environments.cpu_seconds_per_sample`` (with ``environments.pools``, or named in ``uncertainty``) has no
  default spread: no source gives the spread of an environment's mean CPU time per sample; an instance may give
  it a range, and the pool's work per step and the sandboxes billed per CPU-hour move with it.
- Shares are clipped to [0, 1] and rate factors to the schema's (0, 10].
- A parameter whose sources scatter around a point 0 (the fp8 teacher's score penalty: its figures lie on both
  sides of 0, within their own noise) cannot be log-normal, whose every value has the sign of its median. It is
  *additive*: :math:`v = \max(\ell_b, m + \sigma z)` with :math:`m = (\ell + h)/2` and
  :math:`\sigma = (h - \ell) / (2\,\Phi^{-1}((1 + c)/2))`, clipped at its lower bound. Its range is centred on
  the point, so the point is the median and lies within its own P10-P90, however the clip moves P10.
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import TYPE_CHECKING, Optional

import numpy as np

from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads as sp

if TYPE_CHECKING:
    from planopt.models.schema.instance import Instance

DEFAULT_SEED = 0


@dataclass(frozen=True)
class Parameter:
    """One uncertain parameter of an instance."""

    name: str                    # e.g. "priors.rl.signal_scale_samples"
    point: float                 # the instance's value (what a deterministic solve uses)
    low: Optional[float]         # central range, None for a point value
    high: Optional[float]
    confidence: float            # central probability of [low, high]
    group: str                   # parameters of one group share a scenario's z
    source: str                  # where the spread comes from
    lower_bound: float = 0.0     # values are clipped into [lower_bound, upper_bound]
    upper_bound: float = math.inf
    additive: bool = False       # normal (v = m + σz) rather than log-normal (v = m e^{σz}); see the module's rules

    @property
    def median(self) -> float:
        """The median: the range's geometric mean (log-normal) or mean (additive); the point without a range."""
        if self.low is None:
            return self.point
        return (self.low + self.high) / 2.0 if self.additive else math.sqrt(self.low * self.high)

    @property
    def sigma(self) -> float:
        """Sigma of the central range, of the logs (log-normal) or of the values (additive); 0 for a point value."""
        if self.low is None or self.high == self.low:
            return 0.0
        width = self.high - self.low if self.additive else math.log(self.high / self.low)
        return width / (2.0 * NormalDist().inv_cdf((1.0 + self.confidence) / 2.0))

    def quantile(self, q: float) -> float:
        """The value at probability ``q``, clipped into the parameter's bounds."""
        return float(self.values(np.array([NormalDist().inv_cdf(q)]))[0])

    def values(self, z: np.ndarray) -> np.ndarray:
        """The values at standard-normal draws ``z``, clipped into the parameter's bounds."""
        v = self.median + self.sigma * z if self.additive else self.median * np.exp(self.sigma * z)
        return np.clip(v, self.lower_bound, self.upper_bound)

    def to_dict(self) -> dict:
        """The parameter as a row: name, point, P10, P50, P90, group and source."""
        return {"name": self.name, "point": self.point, "p10": self.quantile(0.1), "p50": self.quantile(0.5),
                "p90": self.quantile(0.9), "group": self.group, "source": self.source}


@dataclass
class Scenarios:
    """``n`` scenarios: one array of values per parameter name."""

    n: int
    seed: int
    values: dict[str, np.ndarray] = field(default_factory=dict)
    # the general-score family the forgetting priors were drawn for (``draw``): a candidate student of another
    # family reads them scaled to its own (``ScenarioEvaluator.value``, ``Instance.for_student``); None: as drawn
    family: Optional[str] = None

    def at(self, s: int) -> dict[str, float]:
        """Every parameter's value in scenario ``s``."""
        return {name: float(v[s]) for name, v in self.values.items()}


# --- the parameters of an instance ------------------------------------------------

def _factor(name: str, point: float, factor: tuple[float, float], group: str, source: str, **bounds) -> Parameter:
    return Parameter(name, point, point * factor[0], point * factor[1], 0.8, group, source, **bounds)


def _absolute(name: str, point: float, default: float, rng: tuple[float, float], group: str, source: str) -> Parameter:
    if point != default:  # the user's own value: a point, unless `uncertainty` gives a range
        return Parameter(name, point, None, None, 0.8, group, "instance value (a point; give a range in `uncertainty`)")
    return Parameter(name, point, rng[0], rng[1], 0.8, group, source)


def _failures(rel) -> Parameter:
    """The failure rate: its class's spread (``reliability.cluster_class``), the spread across published clusters
    centred on the default, or the user's measured rate (a point)."""
    name = "reliability.failures_per_gpu_hour"
    if rel.cluster_class is not None:
        return _absolute(name, rel.failures_per_gpu_hour, d.CLUSTER_FAILURES_PER_GPU_HOUR[rel.cluster_class],
                         sp.CLUSTER_FAILURES_PER_GPU_HOUR[rel.cluster_class], "failures",
                         f"spreads.CLUSTER_FAILURES_PER_GPU_HOUR[{rel.cluster_class!r}]: "
                         + ", ".join(d.CLUSTER_CLASS_SOURCES[rel.cluster_class]))
    return _absolute(name, rel.failures_per_gpu_hour, d.FAILURES_PER_GPU_HOUR, sp.ABSOLUTE_FAILURES_PER_GPU_HOUR,
                     "failures", "spreads.ABSOLUTE_FAILURES_PER_GPU_HOUR: the spread across published clusters, "
                     "centred on Llama 3's rate")


def step_time_spread_name(inst: "Instance") -> str:
    """The spreads.py range ``efficiency.mfu_factor`` and ``decode_factor`` draw from: the SFT-hours range when
    SFT is the instance's only method (its rows are SFT runs), else the RL step-time range of its student's kind
    (one mfu_factor serves every stage of a mixed instance, and the RL rows time generation too)."""
    if set(inst.training.methods) == {"sft"}:
        return "FACTOR_SFT_HOURS"
    return "FACTOR_STEP_TIME_MOE" if inst.student.is_moe else "FACTOR_STEP_TIME_DENSE"


def default_parameters(inst: "Instance") -> list[Parameter]:
    """The uncertain parameters of ``inst`` with their default spreads (before the instance's overrides)."""
    eff, rel, pri = inst.efficiency, inst.reliability, inst.priors
    step_name = step_time_spread_name(inst)
    step = getattr(sp, step_name)
    step_src = (f"spreads.{step_name}: leave-one-source-out P10-P90 of the factor reproducing the calibration rows' "
                + ("SFT hours" if step_name == "FACTOR_SFT_HOURS" else "step seconds"))
    out = [
        _factor("efficiency.mfu_factor", eff.mfu_factor, step, "step_time", step_src, upper_bound=10.0),
        _factor("efficiency.decode_factor", eff.decode_factor, step, "step_time", step_src, upper_bound=10.0),
        _failures(rel),
        _absolute("reliability.restart_minutes", rel.restart_minutes, d.RESTART_MINUTES,
                  sp.ABSOLUTE_RESTART_MINUTES, "restart", "spreads.ABSOLUTE_RESTART_MINUTES"),
        _absolute("reliability.checkpoint_write_gb_per_s_per_node", rel.checkpoint_write_gb_per_s_per_node,
                  d.CHECKPOINT_WRITE_GB_PER_S_PER_NODE, sp.ABSOLUTE_CHECKPOINT_WRITE_GB_PER_S_PER_NODE, "write_bandwidth",
                  "spreads.ABSOLUTE_CHECKPOINT_WRITE_GB_PER_S_PER_NODE: Llama 3 sustained to peak"),
    ]
    methods = inst.training.methods
    for m in ("sft", "rl", "opd"):
        if m not in methods:
            continue
        prior = pri.of(m)
        scale = sp.FACTOR_SIGNAL_SCALE_OPD if m == "opd" else sp.FACTOR_SIGNAL_SCALE_SINGLE_ANCHOR
        out.append(_factor(f"priors.{m}.signal_scale_samples", prior.signal_scale_samples, scale, f"signal_{m}",
                           "spreads.FACTOR_SIGNAL_SCALE_" + ("OPD" if m == "opd" else "SINGLE_ANCHOR")))
        if m != "opd":  # OPD's ceiling is the teacher's score, an instance field
            ceiling = sp.FACTOR_CEILING_RL if m == "rl" else sp.FACTOR_CEILING_SFT
            out.append(_factor(f"priors.{m}.ceiling_share_of_headroom", prior.ceiling_share_of_headroom, ceiling,
                               f"ceiling_{m}", f"spreads.FACTOR_CEILING_{m.upper()}", upper_bound=1.0))
        family = inst.task.general_score_family
        forget = sp.FACTOR_FORGETTING_SFT_BY_FAMILY[family] if m == "sft" else sp.FACTOR_FORGETTING_ON_POLICY
        out.append(_factor(f"priors.{m}.forgetting_share_of_baseline", prior.forgetting_share_of_baseline, forget,
                           f"forgetting_{m}", (f"spreads.FACTOR_FORGETTING_SFT_BY_FAMILY[{family!r}]" if m == "sft"
                                               else "spreads.FACTOR_FORGETTING_ON_POLICY"),
                           upper_bound=1.0))
    if "sft" in methods:
        family = inst.task.general_score_family
        out.append(_factor("priors.sft_forgetting_mix_exponent", pri.sft_forgetting_mix_exponent,
                           sp.FACTOR_SFT_MIX_EXPONENT_BY_FAMILY[family], "mix_exponent",
                           f"spreads.FACTOR_SFT_MIX_EXPONENT_BY_FAMILY[{family!r}]"))
        out.append(_factor("priors.sft_repeat_scale_epochs", pri.sft_repeat_scale_epochs, sp.FACTOR_REPEAT_SCALE,
                           "repeat_sft", "spreads.FACTOR_REPEAT_SCALE: two fits of Muennighoff et al. 2023"))
    if "rl" in methods or "opd" in methods:
        out.append(_factor("priors.prompt_repeat_scale_epochs", pri.prompt_repeat_scale_epochs, sp.FACTOR_REPEAT_SCALE,
                           "repeat_prompts", "spreads.FACTOR_REPEAT_SCALE: two fits of Muennighoff et al. 2023"))
    if "lora" in inst.training.adapter_options:
        for m in methods:
            gain = f"FACTOR_LORA_GAIN_{m.upper()}"
            keep = "FACTOR_LORA_FORGETTING_" + ("SFT" if m == "sft" else "ON_POLICY")
            out.append(_factor(f"priors.lora_gain_share.{m}", getattr(pri.lora_gain_share, m), getattr(sp, gain),
                               f"lora_gain_{m}", f"spreads.{gain}: Biderman et al. 2024 to LoRA Without Regret"))
            out.append(_factor(f"priors.lora_forgetting_share.{m}", getattr(pri.lora_forgetting_share, m),
                               getattr(sp, keep), f"lora_forgetting_{m}",
                               f"spreads.{keep}: " + ("Biderman et al. 2024 code IFT to no reduction" if m == "sft"
                                                      else "INFERRED: an adapter may move less KL, to no reduction")))
    from planopt.models.cost.hardware import tier_of
    if any(tier_of(inst, o) == "spot" for o in inst.hardware.gpus + inst.hardware.rollout_gpus):
        spot = _absolute("reliability.spot_reclaimed_share_per_month", rel.spot_reclaimed_share_per_month,
                         d.SPOT_RECLAIMED_SHARE_PER_MONTH, sp.ABSOLUTE_SPOT_RECLAIMED_SHARE_PER_MONTH, "spot_reclaims",
                         "spreads.ABSOLUTE_SPOT_RECLAIMED_SHARE_PER_MONTH: AWS Spot Instance Advisor's ranges")
        out.append(dataclasses.replace(spot, upper_bound=0.99))  # a share of nodes per month, below 1
    out.extend(_staleness_and_fp8(inst))
    cpt = inst.continued_pretraining
    if cpt is not None and any(cpt.tokens_options):  # continued pre-training's gain (cost/pretraining.py)
        out.append(_factor("continued_pretraining.headroom_share", cpt.headroom_share, sp.FACTOR_CPT_HEADROOM_SHARE,
                           "cpt_gain", "spreads.FACTOR_CPT_HEADROOM_SHARE: the scatter of Llemma's ten shares "
                           "(five benchmarks, 7B and 34B)", upper_bound=1.0))
    if inst.releases is not None and inst.releases.releases > 1 and "sft" in methods:
        out.append(Parameter("releases.sft_labels_rebuilt_share", inst.releases.sft_labels_rebuilt_share, None, None, 0.8,
                             "labels_rebuilt", "no default spread (no published rate of label churn)", upper_bound=1.0))
    return out + _point_parameters(inst)


def _staleness_and_fp8(inst: "Instance") -> list[Parameter]:
    """The staleness losses of asynchronous RL and OPD where the instance offers staleness, and the fp8 teacher's
    score penalty where an OPD plan may score in fp8."""
    pri, methods, out = inst.priors, inst.training.methods, []
    if any(s > 0 for s in inst.training.staleness_steps_options) and "rl" in methods:
        stale = _absolute("priors.staleness_gain_loss_per_step", pri.staleness_gain_loss_per_step,
                          d.STALENESS_GAIN_LOSS_PER_STEP, sp.ABSOLUTE_STALENESS_GAIN_LOSS_PER_STEP, "staleness",
                          "spreads.ABSOLUTE_STALENESS_GAIN_LOSS_PER_STEP: AReaL's staleness ablation at η = 2 and 16")
        out.append(dataclasses.replace(stale, upper_bound=0.999))  # a share of the gain lost per step, below 1
    if inst.training.asynchronous_opd:  # OPD takes the staleness options too
        stale = _absolute("priors.opd_staleness_gain_loss_per_step", pri.opd_staleness_gain_loss_per_step,
                          d.OPD_STALENESS_GAIN_LOSS_PER_STEP, sp.ABSOLUTE_OPD_STALENESS_GAIN_LOSS_PER_STEP,
                          "staleness_opd", "spreads.ABSOLUTE_OPD_STALENESS_GAIN_LOSS_PER_STEP: INFERRED, RL's δ a "
                          "fifth to five times (AsyncOPD, arXiv 2606.24143)")
        out.append(dataclasses.replace(stale, upper_bound=0.999))
    if "opd" in methods and "fp8" in inst.teacher.precision_options:
        fp8 = _absolute("priors.fp8_teacher_score_penalty", pri.fp8_teacher_score_penalty,
                        d.TEACHER_PRECISION_SCORE_PENALTY["fp8"], sp.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY, "fp8_teacher",
                        "spreads.ABSOLUTE_FP8_TEACHER_SCORE_PENALTY: Open LLM v1 recoveries of FP8 checkpoints "
                        "(largest drop 0.86 %, per-tensor) mirrored around the point 0, clipped at 0")
        # a share of the teacher's score, in [0, 1); additive, as its range is centred on the point 0
        out.append(dataclasses.replace(fp8, upper_bound=0.999, additive=fp8.low is not None))
    return out


def _point_parameters(inst: "Instance") -> list[Parameter]:
    """The parameters with no default spread that an instance may give a range: the environments' CPU-seconds per
    sample (with pools, or when ``uncertainty`` names it), and each GPU type's own price."""
    out = []
    env = inst.environments
    if env.pools or "environments.cpu_seconds_per_sample" in inst.uncertainty:
        # no source gives the spread of an environment's mean CPU time per sample (its episodes' times vary, which
        # is not the same): a point unless the instance gives a range (cost/environments.py)
        out.append(Parameter("environments.cpu_seconds_per_sample", env.cpu_seconds_per_sample, None, None, 0.8,
                             "environments", "no default spread (no published spread of an environment's mean CPU time "
                             "per sample; give a range in `uncertainty`)"))
    listed = set()
    for option in inst.hardware.gpus + inst.hardware.rollout_gpus:  # one price per GPU type, drawn once
        # an entry's own price (or its provider's, or gpus.json's reference) is one number; a catalog offer's
        # depends on the count an offer holds and has no spread: to give a price a range, give the entry its price
        price = option.price_usd_per_gpu_hour
        if price is None and inst.hardware.offers == "reference":
            from planopt.models.cost.hardware import price_usd_per_gpu_hour
            price = price_usd_per_gpu_hour(inst, option)
        if price is not None and option.key not in listed:
            listed.add(option.key)
            out.append(Parameter(f"hardware.{option.key}.price_usd_per_gpu_hour", price, None, None, 0.8,
                                 f"price_{option.key}", "no default spread (the catalog's range is across providers)"))
    return out


def check_overrides(inst: "Instance") -> None:
    """Raise ValueError naming the field for an ``uncertainty`` key that is not a parameter of the instance."""
    known = {p.name for p in default_parameters(inst)}
    for name in inst.uncertainty:
        if name not in known:
            raise ValueError(f"uncertainty.{name}: unknown parameter; expected one of {', '.join(sorted(known))}")


def parameters(inst: "Instance") -> list[Parameter]:
    """The uncertain parameters of ``inst``, its ``uncertainty`` overrides applied."""
    out = []
    for p in default_parameters(inst):
        given = inst.uncertainty.get(p.name)
        if given is None:
            out.append(p)
        elif isinstance(given, (int, float)):
            out.append(Parameter(p.name, float(given), None, None, 0.8, p.group, "instance uncertainty (a point value)",
                                 p.lower_bound, p.upper_bound))
        else:
            out.append(Parameter(p.name, p.point, given.low, given.high, given.confidence, p.group,
                                 "instance uncertainty (a range)", p.lower_bound, p.upper_bound))
    return out


# Groups added after scenarios were first published, drawn after the others in this order, so that the draws of
# every earlier group (and the figures stated from them) stay those of the same seed.
LATE_GROUPS = ("fp8_teacher", "staleness_opd")


def draw(inst: "Instance", n: int, seed: int = DEFAULT_SEED) -> Scenarios:
    """``n`` scenarios of ``inst``'s parameters; each group's parameters share one standard normal draw, the groups
    drawn in sorted order and then ``LATE_GROUPS``."""
    params = parameters(inst)
    rng = np.random.default_rng(seed)
    present = {p.group for p in params}
    groups = sorted(present - set(LATE_GROUPS)) + [g for g in LATE_GROUPS if g in present]
    z = {g: rng.standard_normal(n) for g in groups}
    return Scenarios(n, seed, {p.name: p.values(z[p.group]) for p in params}, inst.task.general_score_family)


def point_scenario(inst: "Instance") -> dict[str, float]:
    """Each parameter's point value: applied, it leaves the instance's metrics unchanged."""
    return {p.name: p.point for p in default_parameters(inst)}


# --- one scenario as an instance -------------------------------------------------

def _replace(model, path: list[str], value):
    head = path[0]
    if len(path) == 1:
        return model.model_copy(update={head: value})
    return model.model_copy(update={head: _replace(getattr(model, head), path[1:], value)})


def apply(inst: "Instance", values: dict[str, float]) -> "Instance":
    """The instance with each parameter set to its value in one scenario."""
    out = inst
    prices = {}
    for name, value in values.items():
        parts = name.split(".")
        if parts[0] == "hardware":
            prices[parts[1]] = float(value)
        elif parts == ["reliability", "failures_per_gpu_hour"]:  # a drawn rate stands for the class it came from
            rel = out.reliability.model_copy(update={"failures_per_gpu_hour": float(value), "cluster_class": None})
            out = out.model_copy(update={"reliability": rel})
        else:
            out = _replace(out, parts, float(value))
    if prices:
        gpus = [g.model_copy(update={"price_usd_per_gpu_hour": prices[g.key]}) if g.key in prices else g
                for g in out.hardware.gpus]
        rollout = [g.model_copy(update={"price_usd_per_gpu_hour": prices[g.key]}) if g.key in prices else g
                   for g in out.hardware.rollout_gpus]
        out = out.model_copy(update={"hardware": out.hardware.model_copy(update={"gpus": gpus, "rollout_gpus": rollout})})
    return out
