"""The priors of learning and forgetting (``Instance.priors``), and their forgetting priors by benchmark family."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from planopt.models.catalog import defaults as d
from planopt.models.schema.base import (  # noqa: F401 (the shared types)
    PositiveFloat, Strict)


class MethodPrior(Strict):
    """One method's learning and forgetting priors: signal scale, reachable share of the headroom, forgetting
    share."""

    signal_scale_samples: PositiveFloat
    ceiling_share_of_headroom: float = Field(ge=0, le=1, description="RL/SFT: share of the headroom to score_ceiling reachable; OPD uses the teacher")
    forgetting_share_of_baseline: float = Field(ge=0, le=1)


class LoraShares(Strict):
    """A share per method (``priors.lora_gain_share``, ``priors.lora_forgetting_share``)."""

    sft: Annotated[float, Field(ge=0, le=10)]
    rl: Annotated[float, Field(ge=0, le=10)]
    opd: Annotated[float, Field(ge=0, le=10)]


class Priors(Strict):
    """The priors of learning and forgetting: per method, SFT's forgetting curve, repeat scales, LoRA shares,
    staleness loss, the fp8 teacher's score penalty."""

    sft: MethodPrior = MethodPrior(signal_scale_samples=d.SFT_SIGNAL_SCALE_SAMPLES, ceiling_share_of_headroom=d.SFT_CEILING_SHARE_OF_HEADROOM, forgetting_share_of_baseline=d.SFT_FORGETTING_SHARE_OF_BASELINE)
    rl: MethodPrior = MethodPrior(signal_scale_samples=d.RL_SIGNAL_SCALE_SAMPLES, ceiling_share_of_headroom=d.RL_CEILING_SHARE_OF_HEADROOM, forgetting_share_of_baseline=d.RL_FORGETTING_SHARE_OF_BASELINE)
    opd: MethodPrior = MethodPrior(signal_scale_samples=d.OPD_SIGNAL_SCALE_SAMPLES, ceiling_share_of_headroom=1.0, forgetting_share_of_baseline=d.OPD_FORGETTING_SHARE_OF_BASELINE)
    sft_forgetting_mix_exponent: PositiveFloat = d.SFT_FORGETTING_MIX_EXPONENT
    sft_forgetting_scale_samples: PositiveFloat = d.SFT_FORGETTING_SCALE_SAMPLES
    sft_repeat_scale_epochs: PositiveFloat = Field(d.REPEAT_SCALE_EPOCHS, description="R*: repetitions of an SFT example after which a repeat is worth 1/e of a fresh one")
    prompt_repeat_scale_epochs: PositiveFloat = Field(d.REPEAT_SCALE_EPOCHS, description="R*: repetitions of an RL/OPD prompt after which a repeat is worth 1/e of a fresh one")
    lora_gain_share: LoraShares = Field(default_factory=lambda: LoraShares(**d.LORA_GAIN_SHARE), description="per method, the share of full fine-tuning's quality gain a LoRA plan keeps")
    lora_forgetting_share: LoraShares = Field(default_factory=lambda: LoraShares(**d.LORA_FORGETTING_SHARE), description="per method, the share of full fine-tuning's forgetting a LoRA plan keeps")
    staleness_gain_loss_per_step: float = Field(d.STALENESS_GAIN_LOSS_PER_STEP, ge=0, lt=1, description="asynchronous RL: the share of the quality gain lost per step of staleness (a plan keeps (1 - δ)^s of it)")
    opd_staleness_gain_loss_per_step: float = Field(d.OPD_STALENESS_GAIN_LOSS_PER_STEP, ge=0, lt=1, description="asynchronous OPD: the share of the quality gain lost per step of staleness (INFERRED: RL's)")
    fp8_teacher_score_penalty: float = Field(d.TEACHER_PRECISION_SCORE_PENALTY["fp8"], ge=0, lt=1, description="OPD: the relative drop of the teacher's score when it scores in fp8 (0: the sources' fp8 figures are within their noise; scenarios draw its spread)")

    def staleness_loss(self, method: str) -> float:
        """The share of ``method``'s gain lost per step of staleness: OPD's own, RL's for every other method."""
        return self.opd_staleness_gain_loss_per_step if method == "opd" else self.staleness_gain_loss_per_step

    def of(self, method: str) -> MethodPrior:
        """The priors of ``method`` (``sft``, ``rl`` or ``opd``)."""
        return getattr(self, method)


def family_priors(priors: Priors, family: str) -> Priors:
    """``priors`` with the forgetting priors it was not given set to those of the general score's ``family``
    (``defaults.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY``, ``defaults.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY``):
    ``priors.sft.forgetting_share_of_baseline`` unless ``priors.sft`` was given, and
    ``priors.sft_forgetting_mix_exponent`` unless it was. RL and OPD keep one share for every family
    (``defaults.RL_FORGETTING_SHARE_OF_BASELINE``). The fields the input gave stay marked as given, so a candidate
    student of another family (``Instance.for_student``) resolves its own."""
    given = set(priors.model_fields_set)
    update = {}
    if "sft" not in given:
        update["sft"] = priors.sft.model_copy(update={
            "forgetting_share_of_baseline": d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY[family]})
    if "sft_forgetting_mix_exponent" not in given:
        update["sft_forgetting_mix_exponent"] = d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY[family]
    if not update:
        return priors
    out = priors.model_copy(update=update)
    object.__setattr__(out, "__pydantic_fields_set__", given)
    return out


def family_scaled_priors(priors: Priors, family: str, other: str) -> Priors:
    """``priors`` of a score of ``family`` carried to one of family ``other`` (a candidate student's): the SFT
    forgetting share and mix exponent times the ratio of the two families' defaults, so the family's defaults
    become the other's, a value the input gave keeps its distance from its family's default, and a scenario's
    drawn value its draw (``uncertainty.scenarios.ScenarioEvaluator.for_student`` scales alike)."""
    if other == family:
        return priors
    share = d.SFT_FORGETTING_SHARE_OF_BASELINE_BY_FAMILY
    exponent = d.SFT_FORGETTING_MIX_EXPONENT_BY_FAMILY
    sft = priors.sft.model_copy(update={"forgetting_share_of_baseline": min(
        1.0, priors.sft.forgetting_share_of_baseline * share[other] / share[family])})
    out = priors.model_copy(update={"sft": sft, "sft_forgetting_mix_exponent":
                                    priors.sft_forgetting_mix_exponent * exponent[other] / exponent[family]})
    object.__setattr__(out, "__pydantic_fields_set__", set(priors.model_fields_set))
    return out
