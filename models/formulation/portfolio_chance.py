r"""A portfolio schedule that runs undisrupted in at least a share C of capacity scenarios (SAA).

On top of the portfolio MIP (``portfolio.build_portfolio``), for the S
scenarios of ``models/uncertainty/capacity.py`` (on-demand GPUs obtainable
:math:`O_{s,g,b}`, preemption uniforms :math:`U_{s,j,b}`), one binary
:math:`w_s` per scenario says the schedule runs *undisrupted* in scenario
``s``: every on-demand gang it holds is obtainable and no spot run is
preempted before it ends.

On demand: the GPUs held fit what is obtainable. Scenarios short in a pool
share few obtainable levels :math:`v < A^{od}_{g,b}` (one per shortfall size),
so one binary :math:`z_{g,b,v}` says the schedule holds more than :math:`v`
there, and it disrupts every scenario at that level:

.. math::
   \sum_j \mathrm{held}_{j,b,g,od} \le v + (A^{od}_{g,b} - v)\, z_{g,b,v}
   \qquad \text{(on_demand_obtainable)}, \qquad
   w_s \le 1 - z_{g,b,O_{s,g,b}} \qquad \text{(short_pool_disrupts)}

(exact: :math:`w_s = 1` forces the held GPUs within :math:`O_{s,g,b}`; one
big-M row per level instead of one per scenario, and a tighter relaxation).

Spot: a gang of :math:`n` spot GPUs running :math:`h` hours is first
preempted after :math:`T = -\ln U / (n p_g)` hours, so it runs undisrupted iff
:math:`n p_g h \le -\ln U =: E_{s,j,b}`; a stage's training and rollout GPUs
run together on spot as one gang of rate :math:`n p_g + n_r p_{g_r}`, and a
job's other gangs never share its bucket (``define_order``), so in GPU-hours,
summed over the job's spot keys in the bucket:

.. math::
   \sum_{a,g} p_g\, u_{j,a,b,g,spot} \le E_{s,j,b} + (M_{j,b} - E_{s,j,b})(1 - w_s)
   \qquad \text{(spot_not_preempted)}

with :math:`M_{j,b} = \sum_{a,g} p_g H \bar n_{j,a,g}` (a data-derived bound on the left side),
and :math:`\sum_s w_s \ge \lceil C S \rceil` (``enough_scenarios``).

Quantile bounds (valid, after Luedtke, Ahmed and Nemhauser 2010, "An integer
programming approach for linear programs with probabilistic constraints",
Math. Program. 122): at most :math:`k = S - \lceil C S \rceil` scenarios go
uncovered, so one of the :math:`k+1` scenarios with the least room is covered
and the schedule fits the :math:`(k+1)`-th least: :math:`\sum p_g u_{j,a,b,g,spot} \le
E_{(k+1)}` (``spot_quantile``) and :math:`\sum_{j,a} \mathrm{held}_{j,a,b,g,od} \le
O_{(k+1),g,b}` (``on_demand_quantile``). Rows of scenarios with at least that
much room are then implied and left out, and the spot big-M shrinks to
:math:`E_{(k+1)} - E_s`. Both
big-Ms are data: with :math:`w_s = 0` the rows relax to the deterministic
capacity (:math:`A^{od}`) and to :math:`u \le H \bar n` (``runs_on_held``),
:math:`\bar n_{j,a,g}` the gang's largest count of the type. Rows that bind in no
scenario are left out, and a scenario with no binding row has :math:`w_s`
fixed at 1.

What is guaranteed, exactly: in at least :math:`\lceil C S \rceil` of the S
scenarios the schedule runs as planned, so every job meets its deadline there
whatever the recourse; and no schedule of lower cost runs undisrupted in as
many. A schedule that meets its deadlines only *through* recourse (spare
reservations, later buckets) is not credited: the share meeting every deadline
under ``solver/portfolio/risk.py``'s recourse is at least the undisrupted share
(reported next to it), and may be higher.
"""

from __future__ import annotations

import math

import numpy as np
import pyomo.environ as pyo

from planopt.models.uncertainty.capacity import CapacityScenarios
from planopt.models.formulation.portfolio import PortfolioFormulation


def spot_room(scen: CapacityScenarios, j: int, b: int) -> np.ndarray:
    """:math:`E_{s,j,b} = -\\ln U_{s,j,b}` per scenario: preemption-weighted spot GPU-hours (:math:`\\sum p_g n h`) the
    job's gang in bucket ``b`` runs before its first preemption."""
    return -np.log(scen.preemption_uniform[:, j, b])


def needed_scenarios(confidence: float, scenarios: int) -> int:
    """:math:`\\lceil C S \\rceil`, with a 1e-9 slack so that 0.9 x 10 is 9, not 10."""
    return math.ceil(confidence * scenarios - 1e-9)


def add_capacity_chance(m: pyo.ConcreteModel, form: PortfolioFormulation, scen: CapacityScenarios, confidence: float) -> None:
    """The rows above on the portfolio model ``m`` (built by ``build_portfolio``)."""
    d = form.data
    H, S = d.bucket_hours, scen.scenarios
    gidx = {g: k for k, g in enumerate(d.gpus)}
    spare = S - needed_scenarios(confidence, S)   # k: scenarios that may go uncovered
    od_rows, spot_rows = [], []
    od_cap, spot_cap = {}, {}   # quantile bounds (valid for every schedule the rows allow)
    held_by: dict = {}
    spot_by: dict = {}   # (j, b) -> the job's spot keys in the bucket with p_g > 0
    for key in m.U:
        j, a, b, g, k = key
        if k == "on_demand":
            held_by.setdefault((b, g), []).append(key)
        elif k == "spot" and d.preempt[g] > 0:
            spot_by.setdefault((j, b), []).append(key)
    for (b, g), keys in sorted(held_by.items()):
        got = scen.on_demand_gpus[:, gidx[g], b]
        cap = min(d.od_avail[g][b], float(np.sort(got)[spare]))
        if cap < d.od_avail[g][b]:
            od_cap[b, g] = cap
        od_rows += [(b, g, s, float(got[s])) for s in range(S) if got[s] < cap]
    most = {jb: sum(d.preempt[g] * H * form.gangs[j][a].nmax(g) for (j, a, b, g, k) in keys) for jb, keys in spot_by.items()}
    for (j, b) in sorted(spot_by):
        room = spot_room(scen, j, b)
        cap = min(most[j, b], float(np.sort(room)[spare]))
        if cap < most[j, b]:
            spot_cap[j, b] = cap
        spot_rows += [(j, b, s, float(room[s]), cap) for s in range(S) if room[s] < cap]
    binding = {r[2] for r in od_rows} | {r[2] for r in spot_rows}
    m.SCEN = pyo.Set(initialize=range(S))
    m.undisrupted = pyo.Var(m.SCEN, domain=pyo.Binary)
    for s in range(S):
        if s not in binding:
            m.undisrupted[s].fix(1)   # nothing can disrupt the schedule in this scenario
    levels = sorted({(b, g, got) for (b, g, _, got) in od_rows})
    m.OD_LEVEL = pyo.Set(initialize=levels, dimen=3)
    m.holds_above = pyo.Var(m.OD_LEVEL, domain=pyo.Binary)
    m.on_demand_obtainable = pyo.Constraint(m.OD_LEVEL, rule=lambda m, b, g, v: sum(
        m.held[key] for key in held_by[b, g]) <= v + (d.od_avail[g][b] - v) * m.holds_above[b, g, v])
    m.OD_SCEN = pyo.Set(initialize=[(b, g, s, got) for (b, g, s, got) in od_rows], dimen=4)
    m.short_pool_disrupts = pyo.Constraint(m.OD_SCEN, rule=lambda m, b, g, s, v: m.undisrupted[s] <= 1 - m.holds_above[b, g, v])
    m.OD_CAP = pyo.Set(initialize=sorted(od_cap), dimen=2)
    m.on_demand_quantile = pyo.Constraint(m.OD_CAP, rule=lambda m, b, g: sum(m.held[key] for key in held_by[b, g]) <= od_cap[b, g])

    def weighted(m, j, b):
        return sum(d.preempt[key[3]] * m.gpu_hours[key] for key in spot_by[j, b])

    m.SPOT_CAP = pyo.Set(initialize=sorted(spot_cap), dimen=2)
    m.spot_quantile = pyo.Constraint(m.SPOT_CAP, rule=lambda m, j, b: weighted(m, j, b) <= spot_cap[j, b])
    m.SPOT_SCEN = pyo.Set(initialize=[(j, b, s) for (j, b, s, _, _) in spot_rows], dimen=3)
    room = {(j, b, s): (e, cap) for (j, b, s, e, cap) in spot_rows}
    m.spot_not_preempted = pyo.Constraint(m.SPOT_SCEN, rule=lambda m, j, b, s: weighted(m, j, b)
                                          <= room[j, b, s][0] + (room[j, b, s][1] - room[j, b, s][0]) * (1 - m.undisrupted[s]))
    m.enough_scenarios = pyo.Constraint(expr=sum(m.undisrupted[s] for s in m.SCEN) >= needed_scenarios(confidence, S))
