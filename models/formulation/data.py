r"""Index sets and coefficients of the MIP, all taken from the evaluator, as arrays.

Nothing here computes physics of its own: every coefficient comes from the
evaluator's recipe and hardware profiles (``Evaluator.recipe_arrays``,
``Evaluator.hardware_arrays``), so the MIP and the evaluator cannot drift
apart. Indices are positions: recipe :math:`r` is ``recipes[r]``, hardware
:math:`h` is ``hardware[h]``, interval :math:`\tau` is ``intervals[i]``,
component :math:`c` is ``components[c]``.

Work amounts are normalised by their largest value over the recipes,
:math:`\hat A_{r,c} = A_{r,c} / \max_r A_{r,c}`, so the disaggregation bound of
``work.py`` has :math:`M = 1`, and :math:`U_{c,h} = \max_r A_{r,c}\, u_c(h) / 3600`
is the hours that largest amount takes on :math:`h`. The compute hours of a
recipe on a hardware choice are then one matrix product,
:math:`T = \hat A\, U` (``compute_hours``, NaN where the recipe does not fit in
memory; for asynchronous RL each phase's generation and training overlap,
``asynchronous.combined_hours``), and every data-derived bound is a reduction of :math:`T`.

With ``releases`` (``cost/releases.py``) :math:`\pi_h` is :math:`N` times the one run's and :math:`c_r` is
:math:`N c_r - (N-1)(f_r + (1-s)\,\mathrm{labels}_r)`, :math:`K` paid once.

Money is the evaluator's cost (``costs.cost_breakdown_usd``) written as
:math:`K + c_r + \pi_h H_{train}`: :math:`\pi_h = n_h p_h` + hot checkpoint
storage (of the choice's adapter) + operations + the choice's pool of environment
workers (``cost/environments.py``) per training hour (validation
decodes are compute hours like any other), :math:`c_r` = data + sandboxes + logs +
log ingest + egress + cold milestone storage (of the recipe's adapter) +
forgetting repair + operations during lead time, :math:`K` = fixed operations.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from planopt.models.cost import physics as ph
from planopt.models.cost.asynchronous import combined_hours
from planopt.models.cost.evaluator import Evaluator
from planopt.models.cost.releases import release_count, total_line
from planopt.models.schema.plan import HardwareChoice, Recipe


@dataclass
class FormulationData:
    """The MIP's index sets and coefficient arrays of one block (a single job, or one slot of a plan space), all from
    the evaluator."""

    evaluator: Evaluator
    recipes: list[Recipe]
    hardware: list[HardwareChoice]
    intervals: list[float]
    components: list[str]
    classes: list[str]               # memory classes
    recipe_class: np.ndarray         # [recipe] index into classes
    fits: np.ndarray                 # [class, hardware] the memory class fits on the hardware
    amount_max: np.ndarray           # [component] normalisation (data-derived big-M of work.py)
    amount_share: np.ndarray         # [recipe, component] amount / amount_max (0 where none)
    unit_hours: np.ndarray           # [component, hardware] hours for amount_max of c on h (0 where it cannot run)
    usable: np.ndarray               # [component, hardware] the component's memory class fits on h
    compute_hours: np.ndarray        # [recipe, hardware] sum_c share * unit; NaN where the recipe does not fit
    compute_hours_max: np.ndarray    # [hardware] big-M of checkpointing.py: longest fitting recipe
    compute_hours_min: np.ndarray    # [hardware] shortest fitting recipe (a valid lower bound)
    overhead: np.ndarray             # [hardware, interval] o_h(tau)
    interval_kept: np.ndarray        # [hardware, interval] pair not dominated on h
    count: np.ndarray                # [hardware] GPUs
    gpu_price: np.ndarray            # [hardware] USD per GPU-hour
    hourly_usd: np.ndarray           # [hardware] n*price + hot checkpoint storage + operations, per train hour
    recipe_usd: np.ndarray           # [recipe] money that does not scale with GPU time
    lead_hours: np.ndarray           # [recipe]
    quality: np.ndarray              # [recipe]
    forgetting: np.ndarray           # [recipe]
    constant_usd: float
    train_hours_floor: np.ndarray    # [recipe] least training hours over the (h, tau) pairs it fits on (inf: none)
    compute_usd_floor: np.ndarray    # [recipe] least pi_h * training hours over the same pairs (inf: none)
    recipes_in_space: int = 0        # recipes before dominance pruning (``drop_dominated_recipes``)
    dropped: dict[str, int] = field(default_factory=dict)  # what was left out and why (``collect``, ``prune``)
    # A choice of student (``students.py``): the students' names and evaluators, and whose each recipe and
    # hardware choice is (positions into them); one student, the evaluator's, when empty.
    students: list[str] = field(default_factory=list)
    evaluators: list[Evaluator] = field(default_factory=list)
    student_of_recipe: np.ndarray | None = None      # [recipe]
    student_of_hardware: np.ndarray | None = None    # [hardware]

    @property
    def recipe_fits(self) -> np.ndarray:
        """[recipe, hardware] the recipe's memory class fits on the hardware."""
        return self.fits[self.recipe_class]

    @property
    def interval_pairs(self) -> list[tuple[int, int]]:
        """(h, i) index pairs kept by ``undominated_intervals``, in order."""
        hs, is_ = np.nonzero(self.interval_kept)
        return list(zip(hs.tolist(), is_.tolist()))

    def recipe_student(self, r: int) -> int:
        """The position of recipe ``r``'s student (0 with one student)."""
        return 0 if self.student_of_recipe is None else int(self.student_of_recipe[r])

    def hardware_student(self, h: int) -> int:
        """The position of hardware choice ``h``'s student (0 with one student)."""
        return 0 if self.student_of_hardware is None else int(self.student_of_hardware[h])

    def evaluator_of(self, student: int) -> Evaluator:
        """The evaluator of the student at position ``student``."""
        return self.evaluators[student] if self.evaluators else self.evaluator

    def student_name(self, student: int) -> str | None:
        """How plans name the student at position ``student`` (None: the instance's own, as its JSON names it)."""
        return self.students[student] if self.students else None


def component_class(key: str) -> str | None:
    """The memory class a component belongs to (decode/tail/sync carry one), or None."""
    from planopt.models.cost.evaluator import _component_class
    return _component_class(key)


def undominated_intervals(overhead: np.ndarray, relative_tie: float = 1e-12) -> np.ndarray:
    r"""[hardware, interval] mask: per hardware choice, the intervals with the least overhead :math:`o_h(\tau)`.

    Every metric of a single job is non-decreasing in :math:`1 + o_h(\tau)`
    (hours, and money through hours) and no other metric depends on
    :math:`\tau`, so any other interval is dominated on that hardware. Keeping
    only these pairs is exact (the enumeration contract checks it) and takes
    most of the branching out of the interval choice.
    """
    if overhead.size == 0:
        return np.zeros(overhead.shape, dtype=bool)
    best = overhead.min(axis=1, keepdims=True)
    return overhead <= best + relative_tie * np.maximum(1.0, np.abs(best))


def collect(ev: Evaluator, keep_dominated_intervals: bool = False, recipes: list[Recipe] | None = None,
            cache_profiles: bool = True) -> FormulationData:
    """Coefficients for ``ev``'s instance. ``keep_dominated_intervals`` keeps every
    (hardware, interval) pair, for models (e.g. spot work, or stages sharing one interval) where overhead
    is not all that an interval moves. ``recipes``: these instead of the instance's (a stage's options).
    ``cache_profiles=False``: the evaluator keeps no recipe profile it makes here (``Evaluator.recipe_arrays``),
    for a model that prunes most of them and reads the profiles of few."""
    inst = ev.inst
    all_recipes, hardware, intervals = ev.space()
    recipes = all_recipes if recipes is None else recipes
    ra = ev.recipe_arrays(recipes, cache=cache_profiles)
    ha = ev.hardware_arrays(hardware, ra.components, ra.classes, intervals)
    keep_h = ha.fits.any(axis=0) if len(ra.classes) else np.zeros(len(hardware), dtype=bool)
    hardware = [hw for hw, k in zip(hardware, keep_h) if k]
    fits, spu, usable = ha.fits[:, keep_h], ha.seconds_per_unit[:, keep_h], ha.usable[:, keep_h]
    overhead, count, price = ha.overhead[keep_h], ha.count[keep_h], ha.price_usd_per_gpu_hour[keep_h]
    pools = ha.environments_usd_per_hour[keep_h]   # the choices' pools of environment workers (cost/environments.py)

    amount_max = ra.amounts.max(axis=0) if len(recipes) else np.zeros(len(ra.components))
    safe_max = np.where(amount_max > 0, amount_max, 1.0)
    share = np.where(amount_max > 0, ra.amounts / safe_max, 0.0)
    unit = np.where(usable, amount_max[:, None] * spu / 3600.0, 0.0)
    recipe_fits = fits[ra.recipe_class] if len(recipes) else np.zeros((0, len(hardware)), dtype=bool)
    # T = share @ unit, with asynchronous RL's generation and training overlapped phase by phase (asynchronous.py)
    hours = np.where(recipe_fits, combined_hours(share, unit, ra.components), np.nan)
    any_fit = recipe_fits.any(axis=0)
    tmax = np.where(any_fit, np.nanmax(np.where(recipe_fits, hours, -np.inf), axis=0, initial=-np.inf), 0.0) \
        if len(recipes) else np.zeros(len(hardware))
    tmin = np.where(any_fit, np.nanmin(np.where(recipe_fits, hours, np.inf), axis=0, initial=np.inf), 0.0) \
        if len(recipes) else np.zeros(len(hardware))

    st, ck, ops = inst.storage, inst.checkpointing, inst.operations
    # hot checkpoints per training hour: of the choice's adapter (a recipe runs only on choices of its own)
    ckpt_gb = np.array([ev.hardware(hw).checkpoint_gb for hw in hardware], dtype=float)
    hot_per_hour = ck.keep_last * ckpt_gb * st.hot_usd_per_gb_month / ph.d.HOURS_PER_MONTH
    if inst.retention is not None:
        # the retention option prices the recent checkpoints (formulation/retention.py), and its
        # money and cover depend on the interval, so no interval is dominated on cost alone
        hot_per_hour, keep_dominated_intervals = 0.0 * ckpt_gb, True
    kept = np.ones(overhead.shape, dtype=bool) if keep_dominated_intervals else undominated_intervals(overhead)
    # every release pays the hourly money (releases.py): each release is one run
    hourly = release_count(inst) * (count * price + hot_per_hour + ops.usd_per_wall_hour + pools)
    milestones = ck.milestones_kept * ra.checkpoint_gb * st.cold_usd_per_gb_month * ck.milestone_retention_months
    recipe_usd = (ra.data_usd + ra.environments_usd + ra.log_storage_usd + ra.network_usd + ra.log_ingest_usd
                  + milestones + inst.forgetting_repair_usd_per_point * ra.forgetting_points
                  + ops.usd_per_wall_hour * ra.lead_hours)
    # over the releases: the fixed part once, the rest each time, a share of the labels (releases.py)
    recipe_usd = total_line(inst, recipe_usd, ra.fixed_data_usd + ra.fixed_network_usd + milestones, ra.labels_usd)
    constant = ops.fixed_usd
    hours_floor, usd_floor = plan_floors(hours, recipe_fits, overhead, kept, hourly)
    return FormulationData(ev, recipes, hardware, intervals, ra.components, ra.classes, ra.recipe_class, fits,
                           amount_max, share, unit, usable, hours, tmax, tmin, overhead, kept, count, price, hourly,
                           recipe_usd, ra.lead_hours, ra.quality, ra.forgetting_points, float(constant),
                           hours_floor, usd_floor, len(recipes),
                           {"hardware holding no recipe in memory": int((~keep_h).sum())})


# Floors are scaled down by this relative margin, so that float rounding (about 1e-16
# relative) never lifts a floor above the value it bounds.
FLOOR_MARGIN = 1e-12


def plan_floors(hours: np.ndarray, recipe_fits: np.ndarray, overhead: np.ndarray, kept: np.ndarray,
                hourly: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Per recipe, the least training hours and the least hour-priced money over every plan it fits on:

    .. math::
       \underline H_r = \min_{h \ni r} (1 + \min_{\tau \in P_h} o_h(\tau))\, T_r(h), \qquad
       \underline C_r = \min_{h \ni r} \pi_h (1 + \min_{\tau \in P_h} o_h(\tau))\, T_r(h)

    (:math:`+\infty` where the recipe fits nowhere), less a relative
    :data:`FLOOR_MARGIN`. Every plan of :math:`r` has at least these training
    hours and this money per training hour (GPUs, hot storage, operations), so
    they are exact lower bounds.
    """
    n_r = hours.shape[0]
    if hours.size == 0:
        return np.full(n_r, np.inf), np.full(n_r, np.inf)
    stretch = 1.0 + np.where(kept, overhead, np.inf).min(axis=1)              # [h]
    train = np.where(recipe_fits, hours * stretch[None, :], np.inf)          # [r, h]
    hours_floor = train.min(axis=1) * (1.0 - FLOOR_MARGIN)
    usd_floor = (train * hourly[None, :]).min(axis=1) * (1.0 - FLOOR_MARGIN)
    return hours_floor, usd_floor


def dominated_recipes(data: FormulationData, block: int = 256, quality: np.ndarray | None = None,
                      forgetting: np.ndarray | None = None, same: np.ndarray | None = None) -> np.ndarray:
    r"""[recipe] mask of the recipes another recipe dominates on every metric and hardware.

    Recipe :math:`a` dominates :math:`b` when

    .. math::
       q_a \ge q_b,\ F_a \le F_b,\ c_a \le c_b,\ \mathrm{lead}_a \le \mathrm{lead}_b,\
       \text{and } T_a(h) \le T_b(h) \text{ on every hardware } h \text{ that } b \text{ fits on}
       \ (a \text{ fits there too}),

    and, when all of these hold with equality, :math:`a` comes first. *Proof that
    dropping* :math:`b` *is exact.* On any hardware :math:`h` and interval
    :math:`\tau` where plan :math:`(b, h, \tau)` fits, :math:`(a, h, \tau)` fits
    too and, with :math:`1 + o_h(\tau) > 0` and :math:`\pi_h > 0`,

    .. math::
       \mathrm{wall}_a = \mathrm{lead}_a + (1+o_h(\tau)) T_a(h) \le \mathrm{wall}_b, \quad
       \mathrm{cost}_a = K + c_a + \pi_h (1+o_h(\tau)) T_a(h) \le \mathrm{cost}_b,

    and its quality and forgetting are no worse. Every limit (``costs.exceeds``)
    is monotone in its metric, so :math:`(a, h, \tau)` meets every limit
    :math:`(b, h, \tau)` meets, whatever the limits are (sweeps and frontiers change
    them on a built model). Every objective is one of these metrics, so
    :math:`(a, h, \tau)` is at least as good, and at most as costly, hence it is
    in the tie set of the lexicographic rule (``oracle.lexicographic_best``)
    whenever :math:`(b, h, \tau)` is, with no larger cost: the optimal values of
    the first objective and of the cost tie-break are unchanged. Dominance is a
    preorder, and each dropped recipe is dominated by a kept one (the
    comparison runs in an order where a dominator always comes first, and
    transitivity carries it), so the argument chains. Tested against
    enumeration in ``tests/solver/oracles/test_scale_oracle.py``.

    Only the single-job model may drop recipes: a portfolio schedules lead time
    and GPU-hours per type, and a chance model prices scenarios, neither of
    which this comparison covers.

    A stage of a staged plan (``staged.py``) compares with ``quality`` and
    ``forgetting`` matrices [recipe, k] instead of the recipe's own values: its
    plan's score and forgetting for each choice k of the other stages, which
    :math:`a` must match or beat for every k; ``same`` [recipe] (e.g. the method)
    must be equal for :math:`a` to dominate :math:`b`.
    """
    n_r = len(data.recipes)
    if n_r < 2:
        return np.zeros(n_r, dtype=bool)
    t = np.where(data.recipe_fits, data.compute_hours, np.inf)             # +inf: b may have it, a may not need it
    q = -data.quality[:, None] if quality is None else -quality
    f = data.forgetting[:, None] if forgetting is None else forgetting
    g = np.zeros((n_r, 0)) if same is None else np.column_stack([same, -same]).astype(float)
    v = np.column_stack([q, f, g, data.recipe_usd, data.lead_hours, t])
    n_scalar = v.shape[1] - t.shape[1]
    order, vs = _rank_order(v)
    out_sorted = np.zeros(n_r, dtype=bool)
    # First within each family of recipes that differ only in their sampling schedule (most dominance is
    # there, and the pools are small), then among the survivors: exact, since a recipe dropped in the first
    # pass has a dominator that survives it or is dominated in turn (transitivity), and both passes compare
    # in the one sorted order, so ties go to the same recipe.
    family = np.array([hash(_family(r)) for r in data.recipes], dtype=np.int64)[order]
    if len(np.unique(family)) < n_r:
        for f in np.unique(family):
            pos = np.flatnonzero(family == f)
            if len(pos) > 1:
                out_sorted[pos[_sweep(vs[pos], n_scalar, block)]] = True
    alive = np.flatnonzero(~out_sorted)
    out_sorted[alive[_sweep(vs[alive], n_scalar, block)]] = True
    out = np.zeros(n_r, dtype=bool)
    out[order] = out_sorted
    return out


def _family(r) -> tuple:
    """A recipe less its sampling schedule (``dominated_recipes``' first pass)."""
    return (r.method, r.steps, r.teacher_precision, r.teacher_precision_by_phase, r.external_data_share, r.max_epochs,
            r.lora_rank, r.staleness_steps, id(r.teacher_training), r.pretraining_tokens)


def _sweep(vs: np.ndarray, n_scalar: int, block: int) -> np.ndarray:
    """[row] mask of the rows of ``vs`` (ranks, in dominance order) an earlier row is <= in every column."""
    n = len(vs)
    out = np.zeros(n, dtype=bool)
    kept = np.zeros(0, dtype=np.intp)                                     # positions in sorted order
    scalar = np.ascontiguousarray(vs[:, :n_scalar])
    for start in range(0, n, block):
        stop = min(n, start + block)
        # a recipe dominated only by one that is itself dropped in this block is still
        # dominated (transitivity), so the mask needs no second pass
        out[_dominated_in_block(vs, scalar, kept, start, stop, n_scalar)] = True
        kept = np.concatenate([kept, start + np.flatnonzero(~out[start:stop])])
    return out


def _rank_order(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For :func:`dominated_recipes`: the order that sorts the rows of ``v`` by (sum of per-column ranks, index),
    which puts dominators first, and the rows' per-column ranks in that order."""
    n_r = len(v)
    # Compare ranks, not values: per column, a <= b exactly when rank(a) <= rank(b), and
    # small integers move through memory faster than floats. A dominator is <= in every
    # column, so it is <= in the sum of ranks, with equality only for equal vectors:
    # sorting by (rank sum, index) puts dominators first.
    rank = np.empty(v.shape, dtype=np.int16 if n_r < 2**15 else np.int32)
    for j in range(v.shape[1]):
        rank[:, j] = np.unique(v[:, j], return_inverse=True)[1]
    order = np.lexsort((np.arange(n_r), rank.sum(axis=1, dtype=np.int64)))
    return order, rank[order]


def _dominated_in_block(vs: np.ndarray, scalar: np.ndarray, kept: np.ndarray, start: int, stop: int,
                        n_scalar: int) -> np.ndarray:
    """For :func:`dominated_recipes`: the positions (in sorted order) of rows ``start:stop`` of the ranks ``vs``
    that an earlier row is <= in every column, the earlier row one of the ``kept`` positions or of this block;
    the first ``n_scalar`` columns (``scalar``, their copy) are compared first, then the hardware columns 16 at a
    time."""
    cand = scalar[start:stop]
    # earlier kept recipes (all earlier than the block), then earlier recipes of this block, may dominate
    pool_idx = np.concatenate([kept, np.arange(start, stop)])
    pool = scalar[pool_idx]
    alive = pool[None, :, 0] <= cand[:, None, 0]
    scratch = np.empty_like(alive)
    for j in range(1, n_scalar):                                      # cheap scalar columns first
        np.less_equal(pool[None, :, j], cand[:, None, j], out=scratch)
        alive &= scratch
    alive[:, len(kept):] &= np.tri(stop - start, k=-1, dtype=bool)     # of this block, only earlier ones
    bi, pj = np.nonzero(alive)
    pj = pool_idx[pj]
    cand_all = vs[start:stop]
    for j0 in range(n_scalar, vs.shape[1], 16):                       # hardware columns, 16 at a time
        if not len(bi):
            break
        ok = (vs[pj, j0:j0 + 16] <= cand_all[bi, j0:j0 + 16]).all(axis=1)
        bi, pj = bi[ok], pj[ok]
    return start + np.unique(bi)


def drop_dominated_recipes(data: FormulationData) -> FormulationData:
    """The same data without the recipes ``dominated_recipes`` drops (exact; see its proof), nor
    those that fit in memory on no hardware (no plan of theirs is feasible)."""
    keep = ~dominated_recipes(data) & data.recipe_fits.any(axis=1)  # a recipe that fits nowhere is never chosen
    if keep.all():
        return data
    idx = np.flatnonzero(keep)
    return subset_recipes(data, idx)


def subset_recipes(data: FormulationData, idx: np.ndarray) -> FormulationData:
    """``data`` restricted to the recipes at positions ``idx`` (bounds recomputed from the kept ones)."""
    recipes = [data.recipes[i] for i in idx.tolist()]
    recipe_class = data.recipe_class[idx]
    hours = data.compute_hours[idx]
    fits = data.fits[recipe_class]
    any_fit = fits.any(axis=0)
    tmax = np.where(any_fit, np.max(np.where(fits, hours, -np.inf), axis=0, initial=-np.inf), 0.0)
    tmin = np.where(any_fit, np.min(np.where(fits, hours, np.inf), axis=0, initial=np.inf), 0.0)
    return replace(data, recipes=recipes, recipe_class=recipe_class, amount_share=data.amount_share[idx],
                   compute_hours=hours, compute_hours_max=tmax, compute_hours_min=tmin,
                   recipe_usd=data.recipe_usd[idx], lead_hours=data.lead_hours[idx], quality=data.quality[idx],
                   forgetting=data.forgetting[idx], train_hours_floor=data.train_hours_floor[idx],
                   compute_usd_floor=data.compute_usd_floor[idx],
                   student_of_recipe=None if data.student_of_recipe is None else data.student_of_recipe[idx])


def dominated_hardware(data: FormulationData, per_interval: bool = False) -> np.ndarray:
    r"""[hardware] mask of the hardware choices another one dominates for every recipe.

    With :math:`s_h = 1 + \min_{\tau \in P_h} o_h(\tau)` the stretch of its best
    interval, hardware :math:`g` dominates :math:`h` when every memory class that
    fits on :math:`h` fits on :math:`g` and, for every work component :math:`c`
    that some recipe uses and that can run on :math:`h`,

    .. math:: s_g U_{c,g} \le s_h U_{c,h}, \qquad \pi_g s_g U_{c,g} \le \pi_h s_h U_{c,h}

    (and :math:`g` comes first when all hold with equality: symmetric options).
    *Proof that dropping* :math:`h` *is exact.* Amounts are non-negative, so for
    every recipe :math:`r` that fits on :math:`h` and every interval :math:`\tau`,
    plan :math:`(r, g, \tau_g^*)` has training hours
    :math:`s_g \sum_c \hat A_{r,c} U_{c,g} \le s_h T_r(h) \le (1 + o_h(\tau)) T_r(h)`
    and hour-priced money no larger either; quality, forgetting, lead time and
    recipe money are the recipe's own. So it is no worse on any metric, meets
    every limit :math:`(r, h, \tau)` meets, and the argument of
    ``dominated_recipes`` carries over (a kept dominator exists by
    transitivity). Like recipe pruning, single-job models only: a portfolio
    counts GPUs by type.

    ``per_interval``: :math:`g` must be no worse at *every* interval, :math:`(1 + o_g(\tau)) U_{c,g} \le
    (1 + o_h(\tau)) U_{c,h}` and the same for money, for models whose interval is shared by several
    hardware choices (the stages of a staged plan): a plan on :math:`h` at :math:`\tau` is then dominated
    by the same plan on :math:`g` at the same :math:`\tau`.
    """
    n_h = len(data.hardware)
    if n_h < 2:
        return np.zeros(n_h, dtype=bool)
    used = data.amount_share.max(axis=0) > 0 if len(data.recipes) else np.zeros(len(data.components), dtype=bool)
    if per_interval:  # the interval is not this choice's to pick (stages share one): compare at each
        stretch = (1.0 + data.overhead).T                                              # [tau, h]
    else:
        stretch = (1.0 + np.where(data.interval_kept, data.overhead, np.inf).min(axis=1))[None, :]
    unit = np.where(data.usable, data.unit_hours, np.inf)[used]                          # [c, h]; inf: cannot run
    time_ = (unit[None, :, :] * stretch[:, None, :]).reshape(-1, n_h)                   # [(tau, c), h]
    money = time_ * data.hourly_usd[None, :]
    # columns: classes that do NOT fit (0 better), then time and money per component
    v = np.vstack([~data.fits, time_, money]).T.astype(float)                          # [h, dims]
    ranks = np.zeros(n_h)
    for j in range(v.shape[1]):
        ranks += np.unique(v[:, j], return_inverse=True)[1]
    order = np.lexsort((np.arange(n_h), ranks))
    vs = v[order]
    out_sorted = np.zeros(n_h, dtype=bool)
    for p in range(1, n_h):
        out_sorted[p] = bool((vs[:p] <= vs[p]).all(axis=1).any())
    out = np.zeros(n_h, dtype=bool)
    out[order] = out_sorted
    return out


def subset_hardware(data: FormulationData, idx: np.ndarray) -> FormulationData:
    """``data`` restricted to the hardware choices at positions ``idx`` (bounds and floors recomputed)."""
    fits = data.fits[:, idx]
    recipe_fits = fits[data.recipe_class]
    hours = data.compute_hours[:, idx]
    any_fit = recipe_fits.any(axis=0)
    tmax = np.where(any_fit, np.max(np.where(recipe_fits, hours, -np.inf), axis=0, initial=-np.inf), 0.0)
    tmin = np.where(any_fit, np.min(np.where(recipe_fits, hours, np.inf), axis=0, initial=np.inf), 0.0)
    overhead, kept, hourly = data.overhead[idx], data.interval_kept[idx], data.hourly_usd[idx]
    hours_floor, usd_floor = plan_floors(hours, recipe_fits, overhead, kept, hourly)
    return replace(data, hardware=[data.hardware[h] for h in idx.tolist()], fits=fits, unit_hours=data.unit_hours[:, idx],
                   usable=data.usable[:, idx], compute_hours=hours, compute_hours_max=tmax, compute_hours_min=tmin,
                   overhead=overhead, interval_kept=kept, count=data.count[idx], gpu_price=data.gpu_price[idx],
                   hourly_usd=hourly, train_hours_floor=hours_floor, compute_usd_floor=usd_floor,
                   student_of_hardware=None if data.student_of_hardware is None else data.student_of_hardware[idx])


def prune(data: FormulationData) -> FormulationData:
    """Drop dominated hardware choices, then dominated recipes on the hardware left (both exact;
    composed, a dropped plan is dominated by a kept one through at most two steps)."""
    drop = dominated_hardware(data)
    if data.evaluator.inst.retention is not None:
        # the retention money s_h(tau, rho) is per hardware and not in hourly_usd: the domination
        # test does not see it, so keep every hardware choice (recipe pruning stays exact: that
        # money grows with a recipe's hours on each (h, tau, rho))
        drop = np.zeros(len(data.hardware), dtype=bool)
    if drop.any():
        data = subset_hardware(data, np.flatnonzero(~drop))
    fits_nowhere = int((~data.recipe_fits.any(axis=1)).sum())
    before = len(data.recipes)
    out = drop_dominated_recipes(data)
    out.dropped = {**data.dropped, "hardware another dominates": int(drop.sum()),
                   "recipes fitting on no hardware kept": fits_nowhere,
                   "recipes another dominates": before - len(out.recipes) - fits_nowhere}
    return out
