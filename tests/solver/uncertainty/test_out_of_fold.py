"""Step-time and SFT-hours spreads derived leave-one-source-out (issue 24 item 5): the shipped constants are
what the rows give, each kind's point prediction lies inside its own interval, and the arithmetic is the
hand-computed one on synthetic rows."""

import math

import pytest

from planopt.models.catalog import defaults as d
from planopt.models.catalog import spreads
from planopt.models.cost.recipes import RATE_FACTOR
from planopt.uncertainty import calibrate as cal
from planopt.uncertainty import out_of_fold as oof
from tests.support.common import INSTANCES, ROOT

VALIDATION = INSTANCES / "calibration-validation"

# the calibrated MoE factor as shipped (read before any test patches it)
MOE_CALIBRATION = d.STEP_TIME_CALIBRATION_FACTOR["moe"]


@pytest.fixture(scope="module")
def rows():
    return oof.residuals(ROOT)


def _synthetic(logs, sources, kind="dense"):
    return [oof.Residual(f"row{i}", kind, s, math.exp(v), math.exp(v), 0.0, "") for i, (v, s) in enumerate(zip(logs, sources))]


# five rows of three sources; by hand:
# m_-A = median(0.4, -0.2, 0.6) = 0.4 -> e = -0.4, -0.2; m_-B = median(0, 0.2, -0.2, 0.6) = 0.1 -> e = 0.3;
# m_-C = median(0, 0.2, 0.4) = 0.2 -> e = -0.4, 0.4. σ² = (0.16 + 0.04 + 0.09 + 0.16 + 0.16) / 5 = 0.122;
# m = median of all = 0.2; the range is e^(0.2 ± z σ), z = 1.28155.
LOGS = [0.0, 0.2, 0.4, -0.2, 0.6]
SOURCES = ["A", "A", "B", "C", "C"]
Z = 1.2815515655446004  # standard normal P90
HALF = Z * math.sqrt(0.122)


def test_leave_one_source_out_gives_the_hand_computed_interval():
    assert oof.out_of_fold_residuals(LOGS, SOURCES) == pytest.approx([-0.4, -0.2, 0.3, -0.4, 0.4])
    s = oof.derive_logs("dense", LOGS, SOURCES)
    assert (s.residual_p10, s.residual_p90) == pytest.approx((-HALF, HALF))
    assert s.median_factor == pytest.approx(math.exp(0.2))
    assert s.raw_range == pytest.approx((math.exp(0.2 - HALF), math.exp(0.2 + HALF)))
    assert s.raw_range == pytest.approx((0.7807, 1.9110), abs=1e-4)
    assert not s.needs_calibration and s.calibration_factor == 1.0
    assert oof.shipped(s) == (0.781, 1.911)


def test_a_kind_whose_range_excludes_one_is_calibrated_at_its_median():
    shifted = [v - 1.0 for v in LOGS]  # the model 2.7x too fast on every row
    s = oof.derive_logs("moe", shifted, SOURCES)
    assert s.needs_calibration
    assert s.calibration_factor == pytest.approx(math.exp(-0.8))
    # the shipped range is the out-of-fold residual range around the calibrated point: it holds 1
    assert oof.shipped(s) == (round(math.exp(-HALF), 3), round(math.exp(HALF), 3)) == (0.639, 1.565)
    # rows priced with the factor already (l - ln c): the same total factor, the same range
    again = oof.derive_logs("moe", [v + 0.8 for v in shifted], SOURCES, current_factor=math.exp(-0.8))
    assert again.calibration_factor == pytest.approx(math.exp(-0.8))
    assert oof.shipped(again) == oof.shipped(s)


def test_rows_of_one_source_are_left_out_one_row_at_a_time():
    assert oof.out_of_fold_residuals([0.0, 0.2, 0.4], ["A"] * 3) == pytest.approx([-0.3, 0.0, 0.3])
    with pytest.raises(ValueError):
        oof.out_of_fold_residuals([0.1], ["A"])


def test_out_of_fold_ranges_never_see_the_left_out_source():
    rows = _synthetic(LOGS, SOURCES)
    folds = {f.residual.id: f for f in oof.out_of_fold(rows, "dense")}
    # source A left out: derived on B, C alone (e = 0.2, -0.6, 0.2 -> σ² = 0.44 / 3; m = 0.4)
    half = Z * math.sqrt(0.44 / 3)
    assert (folds["row0"].low, folds["row0"].high) == pytest.approx((math.exp(0.4 - half), math.exp(0.4 + half)))
    # moving A's rows anywhere leaves their own range where it was
    far = _synthetic([5.0, -5.0] + LOGS[2:], SOURCES)
    moved = {f.residual.id: f for f in oof.out_of_fold(far, "dense")}
    assert (moved["row0"].low, moved["row0"].high) == pytest.approx((folds["row0"].low, folds["row0"].high))
    assert not moved["row0"].inside and not moved["row1"].inside
    c = oof.coverage(list(folds.values()))
    assert c["rows"] == 5 and c["inside"] == sum(f.inside for f in folds.values())


def test_required_factor_leaves_the_rate_free_components_alone():
    scaled = next(f for f, r in RATE_FACTOR.items() if r == "mfu_factor")
    fixed = next(f for f, r in RATE_FACTOR.items() if r is None)
    by = {f"{scaled}|x": 6.0, f"{fixed}|y": 4.0}
    # 6 / f + 4 = 8  ->  f = 1.5
    assert oof.required_factor(10.0, by, 8.0) == pytest.approx(1.5)
    assert oof.required_factor(10.0, by, 3.0) == oof.MAX_REQUIRED_FACTOR  # no speed-up reaches 3


def test_shipped_constants_are_what_the_rows_give(rows):
    """spreads.py and defaults.py hold the derivation's output to the printed precision; a physics change or new
    rows that move it must re-derive them (`python benchmarks/uncertainty_spreads.py`)."""
    calibrated = {}
    for kind, constant in oof.KIND_CONSTANTS.items():
        s = oof.derive(rows, kind)
        assert oof.shipped(s) == getattr(spreads, constant), kind
        if s.calibration_factor != 1.0:
            calibrated[kind] = round(s.calibration_factor, oof.PRINTED_DIGITS)
    assert calibrated == d.STEP_TIME_CALIBRATION_FACTOR


@pytest.mark.parametrize("constant", sorted(oof.KIND_CONSTANTS.values()))
def test_each_point_prediction_lies_inside_its_own_interval(constant):
    low, high = getattr(spreads, constant)
    assert low <= 1.0 <= high, constant


def test_rows_are_grouped_by_publication_or_release(rows):
    by_id = {r.id: r for r in rows}
    for r in rows:
        if r.id.startswith("nemo-rl-v0"):
            assert r.source == f"nemo-rl-v0.{r.id[10]}", r.id
    # the public v0.5 rows cite the v0.5.0 perf page: the same source as the validation v0.5 rows
    assert by_id["nemo-rl-llama31-8b-16xh100"].source == "nemo-rl-v0.5"
    # the two OpenThinker model cards (one project, dataset, recipe and token estimate) are one source
    assert by_id["openthinker-32b-32xh100"].source == by_id["openthinker-7b-32xh100-offload"].source == "Open Thoughts"
    assert len({by_id["bespoke-stratos-32b-8xh100"].source, by_id["s1-32b-16xh100"].source, "Open Thoughts"}) == 3
    assert {r.kind for r in rows} == {"sft", "dense", "moe"}


def test_the_moe_calibration_scales_exactly_the_rate_bound_components(monkeypatch):
    path = VALIDATION / "nemo-rl-v06-deepseek-v3-256xh100.json"
    total, by = cal.step_seconds(cal.load_case(path))
    monkeypatch.setitem(d.STEP_TIME_CALIBRATION_FACTOR, "moe", 1.0)
    raw_total, raw_by = cal.step_seconds(cal.load_case(path))
    c = MOE_CALIBRATION
    fixed = oof.fixed_time(by)
    assert fixed == pytest.approx(oof.fixed_time(raw_by)) and fixed > 0
    assert total - fixed == pytest.approx((raw_total - fixed) / c)
    # a dense case is untouched
    dense = INSTANCES / "calibration" / "nemo-rl-llama31-8b-16xh100.json"
    before = cal.step_seconds(cal.load_case(dense))[0]
    monkeypatch.setitem(d.STEP_TIME_CALIBRATION_FACTOR, "moe", 0.5)
    assert cal.step_seconds(cal.load_case(dense))[0] == before


@pytest.mark.parametrize("case_id, kind", [("nemo-rl-v06-deepseek-v3-256xh100", "moe"),
                                           ("nemo-rl-v05-qwen3-32b-32xh100", "dense"),
                                           ("openthinker-32b-32xh100", "sft")])
def test_the_exact_figure_interval_is_what_the_uncertainty_model_samples(rows, case_id, kind):
    """FoldRow.figure_interval (the coverage report's out-of-fold P10-P50-P90) equals the sampled interval of
    `planopt calibrate` when the shipped range is the one drawn: the figure scales as 1 / rate factor on its
    rate-bound share only."""
    from planopt.uncertainty import calibration_intervals as ci
    (r,) = [r for r in rows if r.id == case_id]
    low, high = getattr(spreads, oof.KIND_CONSTANTS[kind])
    fold = oof.FoldRow(r, low, high)
    (row,) = cal.calibrate_case(r.file)
    (sampled,) = ci.case_intervals(r.file, n=4 * ci.N_SCENARIOS)  # the SFT range is wide: more draws
    exact = [row.predicted * q for q in fold.figure_interval]
    assert (sampled.p10, sampled.p50, sampled.p90) == pytest.approx(exact, rel=0.02)
    assert fold.inside == (sampled.p10 <= row.published <= sampled.p90)
