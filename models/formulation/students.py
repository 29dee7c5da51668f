r"""A choice of student (``candidate_students``): one plan space over every student, not a layer of rows.

Each student :math:`j` has its own coefficients (its architecture, its scores on the task:
``Instance.for_student``), collected and pruned exactly as a one-student job's. The union
concatenates them into one :class:`~planopt.models.formulation.data.FormulationData`:
recipes :math:`R = \bigsqcup_j R_j`, hardware choices :math:`H = \bigsqcup_j H_j`, memory classes
:math:`K = \bigsqcup_j K_j` (student :math:`j`'s class ``rl`` and student :math:`j'`'s are two
classes), with

.. math::
   \mathrm{fits}_{(j,k),(j',h)} = [j = j']\ \mathrm{fits}^j_{k,h}, \qquad
   T_{(j,r),(j',h)} = \begin{cases} T^j_r(h) & j = j' \\ \text{does not fit} & j \ne j' \end{cases}

Work components are shared by key; an amount is renormalised by the union's largest,
:math:`\hat A_{r,c} = A_{r,c} / \max_{r'} A_{r',c}`, and a unit by the same factor,
:math:`U_{c,h} = \max_{r'} A_{r',c}\, u^{j(h)}_c(h)/3600` (each hardware choice's seconds per unit
are its own student's), so :math:`\sum_c \hat A_{r,c} U_{c,h} = T^j_r(h)` for every pair that fits.

*Why one recipe, one hardware and one interval one-hot suffice.* The memory-fit rows
(``choices.py``) allow a recipe only on a hardware choice its class fits, and a class fits only
its own student's choices, so the chosen recipe and hardware belong to one student, and every
row of the single-job model is that student's model: the chosen plan is priced exactly as the
student's own job prices it. Every student shares the instance's intervals and retention
options. The plan's student is the chosen recipe's (``student_of_recipe``). Dominance pruning
runs per student before the union, so nothing compares across students.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from planopt.models.formulation.data import FormulationData


def union_of_students(blocks: list[FormulationData], names: list[str]) -> FormulationData:
    """One plan space over every student's block (the module docstring); blocks share the intervals."""
    if len(blocks) == 1:
        return replace(blocks[0], students=list(names), evaluators=[blocks[0].evaluator],
                       student_of_recipe=np.zeros(len(blocks[0].recipes), dtype=int),
                       student_of_hardware=np.zeros(len(blocks[0].hardware), dtype=int))
    components = sorted({c for d in blocks for c in d.components})
    col = {c: n for n, c in enumerate(components)}
    amounts = [d.amount_share * d.amount_max[None, :] for d in blocks]            # [r_j, c_j] raw amounts
    amount_max = np.zeros(len(components))
    for d, a in zip(blocks, amounts):
        idx = [col[c] for c in d.components]
        amount_max[idx] = np.maximum(amount_max[idx], a.max(axis=0) if len(a) else 0.0)
    safe = np.where(amount_max > 0, amount_max, 1.0)
    n_r, n_h = sum(len(d.recipes) for d in blocks), sum(len(d.hardware) for d in blocks)
    share, unit = np.zeros((n_r, len(components))), np.zeros((len(components), n_h))
    usable = np.zeros((len(components), n_h), dtype=bool)
    hours = np.full((n_r, n_h), np.nan)
    n_k = sum(len(d.classes) for d in blocks)
    fits = np.zeros((n_k, n_h), dtype=bool)
    r0 = h0 = k0 = 0
    recipe_class = []
    for d, a in zip(blocks, amounts):
        idx = np.array([col[c] for c in d.components], dtype=int)
        rs, hs, ks = slice(r0, r0 + len(d.recipes)), slice(h0, h0 + len(d.hardware)), slice(k0, k0 + len(d.classes))
        if len(idx):
            share[rs, idx] = a / safe[idx][None, :]
            scale = np.where(d.amount_max > 0, safe[idx] / np.where(d.amount_max > 0, d.amount_max, 1.0), 1.0)
            unit[idx, hs] = d.unit_hours * scale[:, None]
            usable[idx, hs] = d.usable
        hours[rs, hs] = d.compute_hours
        fits[ks, hs] = d.fits
        recipe_class.append(d.recipe_class + k0)
        r0, h0, k0 = r0 + len(d.recipes), h0 + len(d.hardware), k0 + len(d.classes)

    def cat(attr: str) -> np.ndarray:
        return np.concatenate([getattr(d, attr) for d in blocks])

    recipe_class = np.concatenate(recipe_class) if recipe_class else np.zeros(0, dtype=int)
    first = blocks[0]
    return replace(first, recipes=[r for d in blocks for r in d.recipes], hardware=[h for d in blocks for h in d.hardware],
                   components=components, classes=[f"{j}:{k}" for j, d in enumerate(blocks) for k in d.classes],
                   recipe_class=recipe_class, fits=fits, amount_max=amount_max, amount_share=share, unit_hours=unit,
                   usable=usable, compute_hours=hours, compute_hours_max=cat("compute_hours_max"),
                   compute_hours_min=cat("compute_hours_min"), overhead=np.concatenate([d.overhead for d in blocks]),
                   interval_kept=np.concatenate([d.interval_kept for d in blocks]), count=cat("count"),
                   gpu_price=cat("gpu_price"), hourly_usd=cat("hourly_usd"), recipe_usd=cat("recipe_usd"),
                   lead_hours=cat("lead_hours"), quality=cat("quality"), forgetting=cat("forgetting"),
                   train_hours_floor=cat("train_hours_floor"), compute_usd_floor=cat("compute_usd_floor"),
                   recipes_in_space=sum(d.recipes_in_space for d in blocks),
                   dropped={k: sum(d.dropped.get(k, 0) for d in blocks) for d in blocks for k in d.dropped},
                   students=list(names), evaluators=[d.evaluator for d in blocks],
                   student_of_recipe=np.concatenate([np.full(len(d.recipes), j, dtype=int) for j, d in enumerate(blocks)]),
                   student_of_hardware=np.concatenate([np.full(len(d.hardware), j, dtype=int) for j, d in enumerate(blocks)]))

