"""Intervals on calibration figures (issue 8 item 2): `planopt calibrate --json` rows carry
``interval: [P10, P90]`` of the prediction under the uncertainty model."""

import json
import math
import shutil

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.uncertainty import calibration_intervals as ci
from planopt.uncertainty.calibrate import calibrate_case, calibrate_dir
from planopt.cli import app
from planopt.models.catalog import spreads
from planopt.models.uncertainty import model as unc
from tests.support.common import INSTANCES

CAL = INSTANCES / "calibration"
STEP_CASE = CAL / "nemo-rl-llama31-8b-16xh100.json"  # dense student: FACTOR_STEP_TIME_DENSE
runner = CliRunner()


def _strict(text: str):
    def refuse(constant):
        raise ValueError(f"non-strict JSON constant {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def public():
    """Every public case's intervals at the defaults, by (case id, figure)."""
    out = {}
    for path in sorted(CAL.glob("*.json")):
        rows = calibrate_case(path)
        for row, fi in zip(rows, ci.case_intervals(path)):
            assert row.figure == fi.figure
            out[(row.id, row.figure)] = (row, fi)
    return out


@pytest.fixture(scope="module")
def public_json():
    res = runner.invoke(app, ["calibrate", str(CAL), "--json"])
    assert res.exit_code in (0, 1), res.output
    return _strict(res.stdout)


def test_every_public_row_has_an_ordered_finite_interval(public, public_json):
    assert len(public_json) == len(public) >= 9
    for row in public_json:
        assert "interval" in row, row
        p10, p90 = row["interval"]
        assert math.isfinite(p10) and math.isfinite(p90) and 0 < p10 <= p90
        _, fi = public[(row["id"], row["figure"])]
        assert (fi.p10, fi.p90) == (p10, p90)
        assert fi.p10 <= fi.p50 <= fi.p90
    sampled = [fi for _, fi in public.values() if fi.state == ci.SAMPLED]
    # the uncertain figures (interruptions, step times, ratio, forgetting) have real width
    assert len(sampled) >= 6 and all(fi.p90 > 1.05 * fi.p10 for fi in sampled)


def test_untouched_figures_have_zero_width_equal_to_the_prediction(public):
    for key in [("tml-opd-qwen3-8b-flops", "student_flops"), ("tml-opd-qwen3-8b-flops", "teacher_flops"),
                # the case sets MTBF, write time and restart itself: the uncertain defaults of the probe
                # instance it builds cancel out, so the interval must still be found fixed
                ("young-daly-3h", "checkpoint_interval_minutes")]:
        row, fi = public[key]
        assert fi.state == ci.FIXED
        assert fi.p10 == fi.p50 == fi.p90 == row.predicted
    row, fi = public[("llama3-405b-interruptions", "interruptions")]
    assert fi.state == ci.SAMPLED
    # failures per GPU-hour: the spread across published clusters centred on the default (P10-P90, absolute);
    # interruptions scale with it exactly, so the prediction is the interval's median and the published 419 lies inside
    lo, hi = spreads.ABSOLUTE_FAILURES_PER_GPU_HOUR
    assert fi.p50 == pytest.approx(row.predicted, rel=0.03)
    assert fi.p10 < row.published < fi.p90
    assert fi.p90 / fi.p10 == pytest.approx(hi / lo, rel=0.05)


def test_table_marks_fixed_intervals_and_inside():
    res = runner.invoke(app, ["calibrate", str(CAL)])
    assert "P10-P90" in res.output and "inside" in res.output
    flops = [line for line in res.output.splitlines() if "student_flops" in line][0]
    assert "(fixed)" in flops
    assert "published figures inside their sampled P10-P90" in res.output


def test_step_interval_widens_with_the_step_time_spread(monkeypatch):
    (base,) = ci.case_intervals(STEP_CASE)
    (row,) = calibrate_case(STEP_CASE)
    lo, hi = spreads.FACTOR_STEP_TIME_DENSE
    # step seconds = sum of component times / rate factor: inside [T/hi, T/lo], the rate-free
    # components (refit, sync) making it narrower than hi/lo
    assert row.predicted / hi * 0.99 <= base.p10 < base.p90 <= row.predicted / lo * 1.01
    monkeypatch.setattr(spreads, "FACTOR_STEP_TIME_DENSE", (0.5, 2.0))
    (wide,) = ci.case_intervals(STEP_CASE)
    assert wide.p90 / wide.p10 > 1.8 * (base.p90 / base.p10)
    assert wide.p10 < base.p10 and wide.p90 > base.p90
    monkeypatch.setattr(spreads, "FACTOR_STEP_TIME_DENSE", (1.0, 1.0))
    (point,) = ci.case_intervals(STEP_CASE)
    assert point.state == ci.FIXED and point.p10 == point.p90 == row.predicted


def test_vectorised_step_seconds_equal_the_predictor_run_per_scenario():
    n = 12
    rec = ci._Recorder()
    calibrate_case(STEP_CASE, transform=rec)
    z = ci.group_normals(rec.instances, n, seed=3)
    fast = ci._component_time_values(STEP_CASE, "step_seconds", z)
    for s in range(n):
        (slow,) = calibrate_case(STEP_CASE, transform=ci._at({g: v[s] for g, v in z.items()}))
        assert fast[s] == pytest.approx(slow.predicted, rel=1e-9)


def test_scenarios_are_stratified_standard_normals_and_plain_draws_match_uncertainty_draw():
    rec = ci._Recorder()
    calibrate_case(STEP_CASE, transform=rec)
    n = 50
    from statistics import NormalDist
    for v in ci.group_normals(rec.instances, n, seed=7).values():
        strata = np.floor(np.array([NormalDist().cdf(x) for x in v]) * n)
        assert sorted(strata) == list(range(n))  # one value in each equal-probability stratum
    (inst,) = rec.instances
    z = ci.group_normals([inst], n, seed=7, stratified=False)
    drawn = unc.draw(inst, n, seed=7)
    for p in unc.parameters(inst):
        assert np.array_equal(p.values(z[p.group]), drawn.values[p.name])


def test_intervals_are_seeded():
    path = CAL / "tml-personalization-forgetting.json"
    assert ci.case_intervals(path, 30, seed=1) == ci.case_intervals(path, 30, seed=1)
    assert ci.case_intervals(path, 30, seed=1) != ci.case_intervals(path, 30, seed=2)


def test_no_intervals_omits_the_key():
    res = runner.invoke(app, ["calibrate", str(CAL), "--json", "--no-intervals"])
    rows = _strict(res.stdout)
    assert rows and all("interval" not in r for r in rows)
    res = runner.invoke(app, ["calibrate", str(CAL), "--no-intervals"])
    assert "P10-P90" not in res.output


def test_unpredictable_rows_get_a_null_interval(tmp_path):
    shutil.copy(CAL / "tml-opd-qwen3-8b-flops.json", tmp_path)
    case = json.loads(STEP_CASE.read_text())
    case.update(id="too-small", gpu={**case["gpu"], "hbm_gb": 8}, gpu_count=1)
    (tmp_path / "too-small.json").write_text(json.dumps(case))
    res = runner.invoke(app, ["calibrate", str(tmp_path), "--json"])
    assert res.exit_code == 1, res.output
    rows = {r["id"]: r for r in _strict(res.stdout)}
    assert "error" in rows["too-small"] and rows["too-small"]["interval"] is None
    assert rows["tml-opd-qwen3-8b-flops"]["interval"] == [rows["tml-opd-qwen3-8b-flops"]["predicted"]] * 2
    (row,) = [r for r in ci.with_intervals(calibrate_dir(tmp_path)) if r.id == "too-small"]
    assert row.interval is None and ci.inside(row) is None
