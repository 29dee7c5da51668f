"""The recipe list: the sampling schedules an instance allows, generated directly, in the product's order."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest

from planopt.instance import load_instance
from planopt.models.cost.recipes import schedules

QWEN = json.loads((Path(__file__).resolve().parents[3] / "instances" / "qwen3-8b-math.json").read_text())


@pytest.mark.parametrize("options,phases,taper", [([4, 8, 16], 3, True), ([16, 4, 8], 3, False), ([2], 4, True),
                                                  ([2, 4, 6, 8, 12], 4, True), ([1, 3], 5, False), ([8, 4, 8, 2], 2, True)])
def test_schedules_are_the_filtered_product_in_its_order(options, phases, taper):
    raw = copy.deepcopy(QWEN)
    raw["training"].update(samples_per_prompt_options=options, phases=phases, taper_only=taper)
    inst = load_instance(raw)
    product = itertools.product(sorted(set(options)), repeat=phases)
    expected = [c for c in product if not taper or all(a >= b for a, b in zip(c, c[1:]))]
    assert schedules(inst) == expected
