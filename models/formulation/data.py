r"""Index sets and coefficients of the MIP, all taken from the evaluator.

Nothing here computes physics of its own: every coefficient is a recipe or
hardware profile of ``costs.Evaluator``, so the MIP and the evaluator cannot
drift apart. Work amounts are normalised by their largest value over the
recipes, so the disaggregation bound of ``work.py`` has :math:`M = 1`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import physics as ph
from ..costs import Evaluator
from ..plan import HardwareChoice, Recipe


@dataclass
class FormulationData:
    evaluator: Evaluator
    recipes: list[Recipe]
    hardware: list[HardwareChoice]
    intervals: list[float]
    components: list[str]
    amount_max: dict[str, float]                       # normalisation per component (data-derived big-M)
    amount_share: dict[tuple[Recipe, str], float]      # amount_c(r) / amount_max_c
    unit_hours: dict[tuple[str, HardwareChoice], float]  # hours for amount_max_c of c on h
    fits: dict[tuple[str, HardwareChoice], bool]       # memory class fits on hardware
    compute_hours_max: dict[HardwareChoice, float]     # big-M of checkpointing.py, per hardware
    overhead: dict[tuple[HardwareChoice, float], float]  # o_h(tau)
    interval_pairs: list[tuple[HardwareChoice, float]]    # (h, tau) pairs not dominated on h
    hourly_usd: dict[HardwareChoice, float]            # n·price + hot checkpoint storage + operations, per train hour
    recipe_usd: dict[Recipe, float]                    # money that does not scale with GPU time
    constant_usd: float

    @property
    def classes(self) -> list[str]:
        return sorted({r.memory_class for r in self.recipes})


def component_class(key: str) -> str | None:
    """The memory class a component belongs to (decode/tail/sync carry one), or None."""
    parts = key.split("|")
    return parts[1] if len(parts) > 1 and (parts[1] in ("rl", "sft") or parts[1].startswith("opd:")) else None


def undominated_intervals(overhead: dict[tuple[HardwareChoice, float], float], hardware, intervals,
                          relative_tie: float = 1e-12) -> list[tuple[HardwareChoice, float]]:
    r"""Per hardware choice, the intervals with the least overhead :math:`o_h(\tau)`.

    Every metric of a single job is non-decreasing in :math:`1 + o_h(\tau)`
    (hours, and money through hours) and no other metric depends on
    :math:`\tau`, so any other interval is dominated on that hardware. Keeping
    only these pairs is exact (the enumeration contract checks it) and takes
    most of the branching out of the interval choice.
    """
    pairs = []
    for h in hardware:
        best = min(overhead[h, i] for i in intervals)
        pairs.extend((h, i) for i in intervals if overhead[h, i] <= best + relative_tie * max(1.0, abs(best)))
    return pairs


def collect(ev: Evaluator, keep_dominated_intervals: bool = False) -> FormulationData:
    """Coefficients for ``ev``'s instance. ``keep_dominated_intervals`` keeps every
    (hardware, interval) pair, for models (e.g. spot work) where overhead is not all that an interval moves."""
    inst = ev.inst
    recipes, hardware, intervals = ev.space()
    profiles = {r: ev.recipe(r) for r in recipes}
    classes = sorted({r.memory_class for r in recipes})
    fits = {(k, h): ev.hardware(h).fits(k) for k in classes for h in hardware}
    hardware = [h for h in hardware if any(fits[k, h] for k in classes)]
    components = sorted({c for p in profiles.values() for c in p.amounts})
    amount_max = {c: max(p.amounts.get(c, 0.0) for p in profiles.values()) for c in components}
    share = {(r, c): p.amounts[c] / amount_max[c] for r, p in profiles.items() for c in p.amounts if amount_max[c] > 0}
    unit = {}
    for h in hardware:
        hp = ev.hardware(h)
        for c in components:
            k = component_class(c)
            if k is None or fits[k, h]:
                unit[c, h] = amount_max[c] * hp.seconds_per_unit(c) / 3600.0
    tmax = {}
    for h in hardware:
        tmax[h] = max((sum(share.get((r, c), 0.0) * unit[c, h] for c in profiles[r].amounts)
                       for r in recipes if fits[r.memory_class, h]), default=0.0)
    st, ck, ops = inst.storage, inst.checkpointing, inst.operations
    ckpt_gb = ph.checkpoint_bytes(inst.student) / ph.GB
    hot_per_hour = ck.keep_last * ckpt_gb * st.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH
    overhead = {(h, i): ev.hardware(h).overhead_share(i) for h in hardware for i in intervals}
    pairs = ([(h, i) for h in hardware for i in intervals] if keep_dominated_intervals
             else undominated_intervals(overhead, hardware, intervals))
    hourly = {h: h.count * ev.hardware(h).price_usd_per_gpu_hour + hot_per_hour + ops.usd_per_wall_hour for h in hardware}
    recipe_usd = {r: p.data_usd + p.environments_usd + p.log_storage_usd
                  + inst.forgetting_repair_usd_per_point * p.forgetting_points
                  + ops.usd_per_wall_hour * p.lead_hours for r, p in profiles.items()}
    constant = ops.fixed_usd + ck.milestones_kept * ckpt_gb * st.cold_usd_per_gb_month * ck.milestone_retention_months
    return FormulationData(ev, recipes, hardware, intervals, components, amount_max, share, unit, fits,
                           tmax, overhead, pairs, hourly, recipe_usd, constant)
