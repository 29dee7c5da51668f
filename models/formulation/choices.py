r"""The one-hot choices: recipe, hardware, checkpoint interval; and memory fit.

.. math::
   \sum_r x_r = 1, \qquad \sum_h z_h = 1, \qquad \sum_\tau y_\tau = 1

Memory fit, through the chosen memory class :math:`w_k = \sum_{r \in k} x_r`
(``class_chosen``, one row each):

.. math::
   w_k \le \sum_{h:\ k \text{ fits on } h} z_h \quad\text{(memory_fit)}, \qquad
   z_h \le \sum_{k \text{ fits on } h} w_k \quad\text{(hardware_holds_class)}

With one-hot :math:`x` and :math:`z` both say exactly "the chosen class fits on
the chosen hardware". They are one row per class and per hardware choice, and
their LP relaxation is tighter than the pairwise rows
:math:`w_k + z_h \le 1` (for each :math:`h` that :math:`k` does not fit on),
which ``memory_fit`` implies: :math:`w_k \le 1 - \sum_{h \not\ni k} z_h \le 1 - z_h`.
"""

from __future__ import annotations

import numpy as np
import pyomo.core as pyo  # not pyomo.environ: its plugins cost every CLI call ~0.3 s unused (BENCHMARKS.md §1)

from planopt.models.formulation.data import FormulationData
from planopt.models.formulation.linear import linear


def define_choices(m: pyo.ConcreteModel, data: FormulationData) -> None:
    """Add the one-hot recipe, hardware and interval choices, the chosen memory class and the memory-fit rows (module
    docstring)."""
    n_r, n_h, n_i, n_k = len(data.recipes), len(data.hardware), len(data.intervals), len(data.classes)
    m.R = pyo.Set(initialize=range(n_r))
    m.H = pyo.Set(initialize=range(n_h))
    m.I = pyo.Set(initialize=range(n_i))
    m.recipe_chosen = pyo.Var(m.R, domain=pyo.Binary)
    m.hardware_chosen = pyo.Var(m.H, domain=pyo.Binary)
    m.interval_chosen = pyo.Var(m.I, domain=pyo.Binary)
    x, z, y = m.recipe_chosen.values(), m.hardware_chosen.values(), m.interval_chosen.values()
    x, z, y = list(x), list(z), list(y)
    m.one_recipe = pyo.Constraint(expr=linear([1.0] * n_r, x) == 1)
    m.one_hardware = pyo.Constraint(expr=linear([1.0] * n_h, z) == 1)
    m.one_interval = pyo.Constraint(expr=linear([1.0] * n_i, y) == 1)

    m.K = pyo.Set(initialize=range(n_k))
    m.class_chosen = pyo.Var(m.K, bounds=(0.0, 1.0))
    w = list(m.class_chosen.values())
    members = [np.flatnonzero(data.recipe_class == k) for k in range(n_k)]
    m.class_of_recipe = pyo.Constraint(m.K, rule=lambda m, k: linear(
        [1.0] + [-1.0] * len(members[k]), [w[k]] + [x[r] for r in members[k].tolist()]) == 0)
    fits = data.fits
    m.memory_fit = pyo.Constraint(m.K, rule=lambda m, k: linear(
        [1.0] + [-1.0] * int(fits[k].sum()), [w[k]] + [z[h] for h in np.flatnonzero(fits[k]).tolist()]) <= 0)
    m.hardware_holds_class = pyo.Constraint(m.H, rule=lambda m, h: linear(
        [1.0] + [-1.0] * int(fits[:, h].sum()), [z[h]] + [w[k] for k in np.flatnonzero(fits[:, h]).tolist()]) <= 0)
