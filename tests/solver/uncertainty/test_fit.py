"""`planopt fit`: pilots made from known parameters are recovered, more points narrow
the posterior, a contradicting pilot moves it, the fitted instance solves, bad input
exits 2 with the column named."""

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from planopt.uncertainty import fit as F
from planopt.cli import app
from planopt.instance import load_instance
from planopt.models.uncertainty import model as unc
from planopt.models.cost.evaluator import Evaluator
from tests.support.common import INSTANCES

runner = CliRunner()
MATH = INSTANCES / "qwen3-8b-math.json"
TINY = INSTANCES / "tiny.json"
EXAMPLE = INSTANCES / "pilot-qwen3-8b-math.csv"
HEADER = "kind,method,gpu,gpu_count,steps,samples_per_prompt,teacher_precision,external_data_share,value,stddev"
Z90 = 1.2815515655446004  # a P10-P90 range spans ±Z90 log-normal sigmas
# "Recovered within the stated error": the truth lies within 3 posterior sigmas of
# the posterior median (a 0.3 % miss rate for a normal posterior).
RECOVERY_SIGMAS = 3.0


def run(*args):
    return runner.invoke(app, [str(a) for a in args])


def log_sigma(p10: float, p90: float) -> float:
    return math.log(p90 / p10) / (2.0 * Z90)


def pilot(tmp_path, inst, truth, lines, seed=0, name="pilot.csv"):
    """A pilot CSV whose values are the evaluator's predictions under ``truth`` plus
    seeded noise at each row's stddev (for step times the template's stddev is a
    relative error, noise in log space, written back in seconds)."""
    path = tmp_path / name
    path.write_text(HEADER + "\n" + "\n".join(lines) + "\n")
    rows = F.read_pilot(path, inst)
    ev, rng = Evaluator(unc.apply(inst, truth)), np.random.default_rng(seed)
    out = []
    for line, row in zip(lines, rows):
        exact = F.predict(ev, row)
        rel = row.stddev / row.value  # the placeholder value is 1, so stddev cells are read as given
        value = exact * math.exp(rng.normal(0.0, rel)) if row.kind == "step_seconds" else exact + rng.normal(0.0, row.stddev)
        cells = line.split(",")
        cells[8] = repr(float(value))
        if row.kind == "step_seconds" and cells[9]:  # the template's stddev is relative: make it seconds
            cells[9] = repr(rel * float(value))
        out.append(",".join(cells))
    path.write_text(HEADER + "\n" + "\n".join(out) + "\n")
    return path


def fitted(path, inst):
    return {p.name: p for p in F.fit(inst, F.read_pilot(path, inst)).parameters}


# --- the grid posterior is exact --------------------------------------------------

def test_grid_posterior_equals_the_conjugate_normal():
    # prior z ~ N(0, 1), one observation of z at 2.0 with sd 0.1: posterior N(2/1.01, 1/101)
    post = F.grid_posterior(["a"], lambda z: -0.5 * ((z["a"] - 2.0) / 0.1) ** 2, str)
    mean, sd = 100.0 * 2.0 / 101.0, 1.0 / math.sqrt(101.0)
    for q, z in ((0.1, -Z90), (0.5, 0.0), (0.9, Z90)):
        assert post.quantile("a", q) == pytest.approx(mean + z * sd, abs=2e-3 * sd)


def test_grid_posterior_2d_marginals_are_exact():
    # independent observations of two z's: each marginal is its own conjugate normal
    lik = lambda z: -0.5 * ((z["a"] + 1.0) / 0.5) ** 2 - 0.5 * ((z["b"] - 3.0) / 0.2) ** 2
    post = F.grid_posterior(["a", "b"], lik, str)
    for g, y, s in (("a", -1.0, 0.5), ("b", 3.0, 0.2)):
        precision = 1.0 + 1.0 / s**2
        mean, sd = y / s**2 / precision, 1.0 / math.sqrt(precision)
        assert post.quantile(g, 0.5) == pytest.approx(mean, abs=0.02 * sd)
        assert post.quantile(g, 0.9) - post.quantile(g, 0.1) == pytest.approx(2 * Z90 * sd, rel=0.02)


# --- recovery ------------------------------------------------------------------------

STEP_LINES = ["step_seconds,opd,H100-SXM,8,20,8,fp8,,1,0.03",
              "step_seconds,rl,H100-SXM,16,20,8-4-4,,,1,0.03",
              "step_seconds,sft,H100-SXM,8,50,,,1.0,1,0.03"]


def test_step_time_is_recovered_within_its_stated_error(tmp_path):
    inst = load_instance(MATH)
    truth = {"efficiency.mfu_factor": 0.8, "efficiency.decode_factor": 0.8}
    got = fitted(pilot(tmp_path, inst, truth, STEP_LINES, seed=1), inst)
    prior_sigma = unc.parameters(inst)[0].sigma
    for name in truth:
        p = got[name]
        s = log_sigma(p.posterior["p10"], p.posterior["p90"])
        assert abs(math.log(p.point_after / truth[name])) < RECOVERY_SIGMAS * s
        assert s < prior_sigma / 3  # three 3 % step times pin a 21 % prior down


LEARNING_LINES = ["task_score,opd,,,25,8,fp8,,1,0.5", "task_score,opd,,,50,8,fp8,,1,0.5",
                  "task_score,opd,,,100,8,fp8,,1,0.5", "task_score,opd,,,200,8-4-4,fp8,,1,0.5",
                  "general_score_drop,opd,,,200,8,fp8,,1,0.1",
                  "task_score,sft,,,300,,,1.0,1,0.5", "task_score,sft,,,1000,,,1.0,1,0.5",
                  "task_score,sft,,,3000,,,1.0,1,0.5", "task_score,sft,,,10000,,,1.0,1,0.5",
                  "general_score_drop,sft,,,2000,,,1.0,1,0.5", "general_score_drop,sft,,,2000,,,0.85,1,0.5",
                  "general_score_drop,sft,,,2000,,,0.7,1,0.5"]
LEARNING_TRUTH = {"priors.opd.signal_scale_samples": 700_000.0, "priors.opd.forgetting_share_of_baseline": 0.035,
                  "priors.sft.signal_scale_samples": 260_000.0, "priors.sft.ceiling_share_of_headroom": 0.72,
                  "priors.sft.forgetting_share_of_baseline": 0.3, "priors.sft_forgetting_mix_exponent": 5.0}


def test_learning_curves_and_forgetting_are_recovered_within_their_stated_error(tmp_path):
    """Over 10 noisy pilots: every estimate within 4 posterior sigmas of the truth, and
    the errors' RMS in sigmas near 1 (the stated error is neither too narrow nor too wide)."""
    inst = load_instance(MATH)
    priors = {p.name: p for p in unc.parameters(inst)}
    errors = {name: [] for name in LEARNING_TRUTH}
    for seed in range(10):
        got = fitted(pilot(tmp_path, inst, LEARNING_TRUTH, LEARNING_LINES, seed=seed), inst)
        for name, true in LEARNING_TRUTH.items():
            p = got[name]
            assert p.updated, name
            s = log_sigma(p.posterior["p10"], p.posterior["p90"])
            assert s < priors[name].sigma, name  # the pilot narrowed it
            errors[name].append(math.log(p.point_after / true) / s)
    for name, z in errors.items():
        assert max(map(abs, z)) < 4.0, (name, z)  # 60 draws: P(any beyond 4) = 0.4 %
        # RMS of 10 standard normals: 99 % within 0.50..1.52
        assert 0.4 < math.sqrt(np.mean(np.square(z))) < 1.8, (name, z)


def test_rl_curve_and_forgetting_are_fitted_jointly_and_recovered(tmp_path):
    """RL forgetting follows the progress along the curve: one 3-D grid (scale, ceiling, share)."""
    inst = load_instance(MATH)
    truth = {"priors.rl.signal_scale_samples": 18e6, "priors.rl.ceiling_share_of_headroom": 0.45,
             "priors.rl.forgetting_share_of_baseline": 0.04}
    lines = [f"task_score,rl,,,{s},16,,,1,0.1" for s in (100, 200, 400, 800)]
    lines += ["general_score_drop,rl,,,800,16,,,1,0.05", "general_score_drop,rl,,,400,16,,,1,0.05"]
    result = F.fit(inst, F.read_pilot(pilot(tmp_path, inst, truth, lines, seed=5), inst))
    priors = {p.name: p for p in unc.parameters(inst)}
    got = {p.name: p for p in result.parameters}
    assert set(got) == set(truth) and {p.block for p in got.values()} == {"rl learning curve and forgetting"}
    for name, true in truth.items():
        s = log_sigma(got[name].posterior["p10"], got[name].posterior["p90"])
        assert abs(math.log(got[name].point_after / true)) < RECOVERY_SIGMAS * s, name
        assert s < priors[name].sigma, name
    assert log_sigma(got["priors.rl.forgetting_share_of_baseline"].posterior["p10"],
                     got["priors.rl.forgetting_share_of_baseline"].posterior["p90"]) < priors["priors.rl.forgetting_share_of_baseline"].sigma / 3


def test_posterior_ranges_cover_the_truth_at_their_nominal_rate(tmp_path):
    """Truths drawn from the prior: the P10-P90 posterior range holds them in about 80 % of pilots."""
    inst = load_instance(MATH)
    mfu = {p.name: p for p in unc.parameters(inst)}["efficiency.mfu_factor"]
    rng = np.random.default_rng(3)
    trials, covered = 60, 0
    for t in range(trials):
        true = float(mfu.values(np.array([rng.standard_normal()]))[0])
        truth = {"efficiency.mfu_factor": true, "efficiency.decode_factor": true}
        p = fitted(pilot(tmp_path, inst, truth, STEP_LINES[:2], seed=100 + t), inst)["efficiency.mfu_factor"]
        covered += p.posterior["p10"] <= true <= p.posterior["p90"]
    # Binomial(60, 0.8): mean 48, sd 3.1; 38..57 is beyond ±3 sd
    assert 38 <= covered <= 57, covered


# --- narrowing and moving ---------------------------------------------------------------

def width(p) -> float:
    return math.log(p.posterior["p90"] / p.posterior["p10"])


def test_more_pilot_points_narrow_the_posterior(tmp_path):
    inst = load_instance(MATH)
    truth = {"priors.opd.signal_scale_samples": 700_000.0}
    few = ["task_score,opd,,,50,8,fp8,,1,1.0"]
    many = few + ["task_score,opd,,,25,8,fp8,,1,1.0", "task_score,opd,,,100,8,fp8,,1,1.0",
                  "task_score,opd,,,200,8,fp8,,1,1.0", "task_score,opd,,,300,8,fp8,,1,1.0"]
    name = "priors.opd.signal_scale_samples"
    prior = {p.name: p for p in unc.parameters(inst)}[name]
    w_few = width(fitted(pilot(tmp_path, inst, truth, few, name="few.csv"), inst)[name])
    w_many = width(fitted(pilot(tmp_path, inst, truth, many, name="many.csv"), inst)[name])
    assert w_many < 0.6 * w_few < 0.6 * 2 * Z90 * prior.sigma
    one = width(fitted(pilot(tmp_path, inst, {}, STEP_LINES[:1], name="one.csv"), inst)["efficiency.mfu_factor"])
    three = width(fitted(pilot(tmp_path, inst, {}, STEP_LINES, name="three.csv"), inst)["efficiency.mfu_factor"])
    assert three < 0.75 * one  # 3 rows of equal error: about 1/sqrt(3) of the width


def test_a_pilot_that_contradicts_the_prior_moves_the_estimate(tmp_path):
    """Step times 1.6x the model's: the fitted factor leaves the prior's P10-P90 range."""
    inst = load_instance(MATH)
    row = F.read_pilot(pilot(tmp_path, inst, {}, STEP_LINES[:1]), inst)[0]
    slow = 1.6 * F.predict(Evaluator(inst), row)
    path = tmp_path / "slow.csv"
    path.write_text(HEADER + "\n" + f"step_seconds,opd,H100-SXM,8,20,8,fp8,,{slow},{0.03 * slow}\n")
    result = F.fit(inst, F.read_pilot(path, inst))
    p = {q.name: q for q in result.parameters}["efficiency.mfu_factor"]
    assert p.posterior["p90"] < p.prior.quantile(0.1)
    assert p.point_after < 0.7
    # the fitted model reproduces the slow pilot within its stated error
    after = result.row_fits()[0]["predicted_after"]
    assert abs(math.log(after / slow)) < 2 * 0.03


def test_a_parameter_the_instance_holds_at_a_point_is_not_moved(tmp_path):
    raw = json.loads(TINY.read_text())
    raw["uncertainty"] = {"efficiency.mfu_factor": 1.0, "efficiency.decode_factor": 1.0}
    inst = load_instance(raw)
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "\nstep_seconds,opd,H100-SXM,8,10,8,fp8,,300,\n")
    result = F.fit(inst, F.read_pilot(path, inst))
    assert all(not p.updated and "point value" in p.note for p in result.parameters)
    assert result.values() == {}


# --- the command --------------------------------------------------------------------------

def test_the_example_pilot_fits_and_narrows_every_parameter_it_updates(tmp_path):
    out = tmp_path / "fitted.json"
    res = run("fit", MATH, EXAMPLE, "--out", out, "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"instance", "pilot", "out", "parameters", "rows"} <= set(data)
    names = {p["name"] for p in data["parameters"]}
    assert {"efficiency.mfu_factor", "priors.opd.signal_scale_samples", "priors.sft.forgetting_share_of_baseline",
            "priors.sft_forgetting_mix_exponent"} <= names
    for p in data["parameters"]:
        assert p["posterior"]["p90"] / p["posterior"]["p10"] < p["prior"]["p90"] / p["prior"]["p10"], p["name"]
    # the fitted model predicts the pilot better than the prior's point values
    rows = data["rows"]
    chi2 = lambda key: sum(((r[key] - r["measured"]) / r["stddev"]) ** 2 for r in rows)
    assert chi2("predicted_after") < chi2("predicted_before")
    assert len(rows) == sum(1 for line in EXAMPLE.read_text().splitlines()
                            if line.strip() and not line.startswith(("#", "kind")))


def test_the_fitted_instance_holds_the_posterior_and_solves(tmp_path):
    out = tmp_path / "fitted.json"
    res = run("fit", MATH, EXAMPLE, "--out", out, "--json")
    assert res.exit_code == 0, res.output
    fitted_params = {p["name"]: p for p in json.loads(res.stdout)["parameters"]}
    inst = load_instance(out)
    loaded = {p.name: p for p in unc.parameters(inst)}
    for name, p in fitted_params.items():
        assert loaded[name].point == pytest.approx(p["point_after"], rel=1e-12)
        assert (loaded[name].low, loaded[name].high) == pytest.approx((p["posterior"]["p10"], p["posterior"]["p90"]), rel=1e-12)
    # everything else is the input instance
    before, after = json.loads(MATH.read_text()), json.loads(out.read_text())
    assert {k: v for k, v in after.items() if k not in ("efficiency", "priors", "uncertainty")} == before
    solved = run("solve", out, "--confidence", "0.9", "--scenarios", "40", "--no-sensitivity", "--json")
    assert solved.exit_code in (0, 3), solved.output
    assert json.loads(solved.stdout)["risk"]["confidence"] == 0.9


def test_text_report_shows_prior_and_posterior(tmp_path):
    res = run("fit", MATH, EXAMPLE, "--out", tmp_path / "f.json")
    assert res.exit_code == 0, res.output
    for text in ("prior P10–P90", "posterior P10–P90", "point before → after", "efficiency.mfu_factor", "Wrote"):
        assert text in res.stdout


BAD = [
    ("kind,method,gpu,value\nstep_seconds,opd,H100-SXM,3\n", "missing column(s) gpu_count"),
    (HEADER + ",colour\nstep_seconds,opd,H100-SXM,8,20,8,fp8,,300,,red\n", "unknown column 'colour'"),
    ("", "empty"),
    ("# only a comment\n", "empty"),
    (HEADER + "\n", "no measurements"),
    (HEADER + "\nstep_time,opd,H100-SXM,8,20,8,fp8,,300,\n", "line 2: kind"),
    (HEADER + "\nstep_seconds,dpo,H100-SXM,8,20,8,fp8,,300,\n", "line 2: method"),
    (HEADER + "\nstep_seconds,opd,H100-SXM,8,20,8,fp8,,-300,\n", "line 2: value: step seconds must be positive"),
    (HEADER + "\nstep_seconds,opd,H100-SXM,8,20,8,fp8,,fast,\n", "line 2: value: expected a number"),
    (HEADER + "\nstep_seconds,opd,H10O,8,20,8,fp8,,300,\n", "line 2: gpu: 'H10O' is not in"),
    (HEADER + "\nstep_seconds,opd,H100-SXM,12,20,8,fp8,,300,\n", "line 2: gpu_count: 12"),
    (HEADER + "\nstep_seconds,opd,H100-SXM,8,20,8,int8,,300,\n", "line 2: teacher_precision"),
    (HEADER + "\ntask_score,opd,,,20,8-4,fp8,,60,\n", "line 2: samples_per_prompt"),
    (HEADER + "\ntask_score,opd,,,20,8,fp8,,101,\n", "line 2: value: task score 101 is outside"),
    (HEADER + "\ntask_score,opd,,,20,8,fp8,,-1,\n", "line 2: value: task score -1 is outside"),
    (HEADER + "\ntask_score,rl,,,-5,8,,,60,\n", "line 2: steps"),
    (HEADER + "\ntask_score,rl,,,50,8,,,60,0\n", "line 2: stddev"),
    (HEADER + "\ntask_score,sft,,,50,,,1.5,60,\n", "line 2: external_data_share"),
    (HEADER + "\ntask_score,rl,H100-SXM,8,50,8,,,60,\n", "line 2: gpu: must be empty"),
    (HEADER + "\ngeneral_score_drop,sft,,,50,,,1.0,200,\n", "line 2: value: a drop of 200"),
    (HEADER + "\ntask_score,opd,,,20,8,fp8,,60\n", "line 2: expected 10 cells"),
]


@pytest.mark.parametrize("text,expected", BAD)
def test_bad_pilot_exits_2_naming_the_field(tmp_path, text, expected):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    out = tmp_path / "out.json"
    res = run("fit", MATH, path, "--out", out)
    assert res.exit_code == 2, res.output
    assert expected in res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert not out.exists()


def test_comments_a_byte_order_mark_and_notes_are_read(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("\ufeff# a comment\n" + HEADER + ",note\n\nstep_seconds,opd,H100-SXM,8,,8,fp8,,300,,\"mean, 20 steps\"\n",
                    encoding="utf-8")
    (row,) = F.read_pilot(path, load_instance(MATH))
    assert (row.line, row.value, row.recipe.steps, row.recipe.samples_per_prompt) == (4, 300.0, 1, (8, 8, 8))
    assert row.stddev == pytest.approx(F.DEFAULT_STEP_SECONDS_RELATIVE_STDDEV * 300.0)


def test_a_method_the_instance_does_not_allow_is_refused(tmp_path):
    raw = json.loads(TINY.read_text())
    del raw["training"]["methods"]["sft"]
    inst_file = tmp_path / "no-sft.json"
    inst_file.write_text(json.dumps(raw))
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "\ntask_score,sft,,,50,,,1.0,40,\n")
    res = run("fit", inst_file, path, "--out", tmp_path / "o.json")
    assert res.exit_code == 2 and "line 2: method: 'sft' is not in the instance's training.methods" in res.output


def test_a_pilot_far_beyond_the_prior_is_refused_naming_the_parameter(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text(HEADER + "\nstep_seconds,opd,H100-SXM,8,20,8,fp8,,3000000,1\n")  # seconds read as microseconds, say
    res = run("fit", MATH, path, "--out", tmp_path / "o.json")
    assert res.exit_code == 2 and "efficiency.mfu_factor" in res.output, res.output


@pytest.mark.parametrize("out,expected", [("missing-folder/f.json", "--out: folder"), ("f.txt", "--out: expected a .json"),
                                          ("", "--out:")])
def test_out_path_is_checked_before_fitting(tmp_path, out, expected):
    target = tmp_path / out if out else tmp_path  # "" -> the folder itself
    res = run("fit", MATH, tmp_path / "no-such-pilot.csv", "--out", target)
    assert res.exit_code == 2 and expected in res.output, res.output  # the out path fails first


def test_out_may_not_overwrite_an_input(tmp_path):
    inst = tmp_path / "job.json"
    inst.write_text(MATH.read_text())
    res = run("fit", inst, EXAMPLE, "--out", inst)
    assert res.exit_code == 2 and "is an input file" in res.output
    assert inst.read_text() == MATH.read_text()


def test_the_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "f.json"
    out.write_text("old")
    assert run("fit", MATH, EXAMPLE, "--out", out).exit_code == 0
    assert json.loads(out.read_text())["name"] == "qwen3-8b-math-reasoning"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]


@pytest.mark.parametrize("make, expected", [
    (lambda hdr, row: hdr + "\n" + row.replace(row.split(",")[0], row.split(",")[0] + "\x00", 1), "holds a NUL byte"),
    (lambda hdr, row: hdr + "\n" + ",".join(row.split(",")[:-1] + ["x" * 200_000]), "keep each cell short"),
    (lambda hdr, row: "\n".join([hdr] + [row] * 10_001), "over the 10,000 a pilot is read with"),
])
def test_a_pilot_file_the_reader_cannot_take_is_one_line_exit_2(tmp_path, make, expected):
    """Issue 28 items 6, 7 and 9: a NUL byte was read as valid, a 5 MB note was an internal error, and 200,000 rows
    ran for 111 s: each is one line naming the file, exit 2, at once."""
    lines = [l for l in (INSTANCES / "pilot-qwen3-8b-math.csv").read_text().splitlines() if l and not l.startswith("#")]
    path = tmp_path / "pilot.csv"
    path.write_text(make(lines[0], lines[1]) + "\n")
    res = CliRunner().invoke(app, ["fit", str(INSTANCES / "qwen3-8b-math.json"), str(path), "--out", str(tmp_path / "f.json")])
    assert res.exit_code == 2 and expected in res.output and len(res.output.strip().splitlines()) == 1, res.output


def test_a_row_the_fit_leaves_more_than_3_sigma_off_is_warned_about(tmp_path):
    """Issue 25 item 7 (item 10): a pilot row whose fitted prediction stays more than 3 sigma from its measurement
    gets one line on stderr and one entry of ``warnings`` in --json; the shipped example gets none."""
    clean = run("fit", MATH, EXAMPLE, "--out", tmp_path / "clean.json", "--json")
    assert clean.exit_code == 0 and json.loads(clean.stdout)["warnings"] == [] and "warning" not in clean.stderr
    slip = tmp_path / "slip.csv"
    slip.write_text(EXAMPLE.read_text() + "task_score,opd,,,100,8,fp8,,75.0,,a slip\n")
    line = len(EXAMPLE.read_text().splitlines()) + 1
    for extra in (["--json"], []):
        res = run("fit", MATH, slip, "--out", tmp_path / "f.json", *extra)
        assert res.exit_code == 0, res.output
        warned = res.stderr.strip().splitlines()
        assert len(warned) == 1 and warned[0].startswith(f"warning: pilot line {line} (task_score, opd, 100 steps")
        assert "σ off" in warned[0]
    assert f"{line}  " in res.stdout and " !" in res.stdout   # the text report marks the row
    data = json.loads(run("fit", MATH, slip, "--out", tmp_path / "f.json", "--json").stdout)
    assert len(data["warnings"]) == 1 and data["warnings"][0] in warned[0]
    off = {r["line"]: r["sigmas_off"] for r in data["rows"]}
    assert off[line] < -3 and all(abs(v) <= 3 for n, v in off.items() if n != line)
    quiet = run("-q", "fit", MATH, slip, "--out", tmp_path / "f.json", "--json")
    assert quiet.stderr == "" and len(json.loads(quiet.stdout)["warnings"]) == 1


def test_row_warnings_use_the_threshold():
    rows = [{"line": 4, "kind": "task_score", "run": "rl, 10 steps", "measured": 50.0, "stddev": 2.0,
             "predicted_after": 50.0 + 2.0 * s, "sigmas_off": s} for s in (2.9, 3.0, 3.1, -3.5)]
    import re
    assert [re.search(r"[\d.]+ σ off", w).group(0) for w in F.row_warnings(rows)] == ["3.1 σ off", "3.5 σ off"]
    assert len(F.row_warnings(rows, sigmas=2.0)) == 4


@pytest.mark.parametrize("case", ["asynchronous RL", "agent loop", "continued pre-training"])
def test_a_step_time_is_predicted_as_the_evaluator_runs_the_steps(case):
    """A pilot's (and a tracked run's) step seconds: the steps' compute hours overlapped as the evaluator overlaps
    them (asynchronous RL, an agent loop on a pool) and without the continued pre-training that runs before the
    first step, over the steps; the same at the point values and in every scenario of the point. Summing the
    components instead over-predicted an overlapped step (found 2026-12-07)."""
    from planopt.models.cost.asynchronous import combine
    from planopt.models.cost.hardware import hardware_options
    from planopt.models.cost.pretraining import PRETRAIN_KEY
    from planopt.models.schema.plan import HardwareChoice, Plan, Recipe, Stage
    from planopt.models.uncertainty.scenarios import ScenarioEvaluator
    from planopt.instance import parse_instance
    if case == "asynchronous RL":
        data = json.loads((INSTANCES / "qwen3-32b-agentic-rl-split-rollout.json").read_text())
        data["training"]["staleness_steps_options"] = [0, 1]
        inst = parse_instance(data)
        hw = next(h for h in hardware_options(inst) if h.split)
        recipe = Recipe("rl", 250, (8, 8, 8), lora_rank=hw.lora_rank, staleness_steps=1)
    elif case == "agent loop":
        inst = load_instance(INSTANCES / "qwen3-32b-agentic-rl-environments.json")
        hw = next(h for h in hardware_options(inst) if h.environment_pool is not None and not h.split)
        recipe = Recipe("rl", 250, (8, 8, 8), lora_rank=hw.lora_rank)
    else:
        data = json.loads((INSTANCES / "math-8b-pretrained-or-32b.json").read_text())
        data.pop("candidate_students")
        inst = parse_instance(data)
        hw = HardwareChoice("MI300X", 32)
        recipe = Recipe("opd", 400, (16, 16, 16), "fp8", pretraining_tokens=5e9)
    ev = Evaluator(inst)
    by_component = ev.compute_hours_by_component(recipe, hw)
    steps_only = {k: v for k, v in by_component.items() if k != PRETRAIN_KEY}
    assert (PRETRAIN_KEY in by_component) == (case == "continued pre-training")
    training = {k: v for k, v in steps_only.items() if not k.startswith("eval_")}   # a trainer logs evaluation apart
    assert len(training) < len(steps_only)                                           # the evaluation runs are there
    evaluation_hours = float(combine(steps_only)) - float(combine(training))
    expected = float(combine(training)) * 3600.0 / recipe.steps
    if case != "continued pre-training":
        assert expected < sum(steps_only.values()) * 3600.0 / recipe.steps * (1 - 1e-6)   # the overlap matters here
    row = F.PilotRow(1, "step_seconds", recipe.method, recipe, hw, expected, 0.03 * expected)
    assert F.predict(ev, row) == pytest.approx(expected, rel=1e-12)
    sev = ScenarioEvaluator(ev, unc.draw(inst, 8, seed=1))
    plan = Plan((Stage(recipe, hw),), 60.0)
    # the scenario evaluator's own run: wall hours = lead + compute (1 + overhead), each in its scenario
    compute = (sev.plan_metrics(plan).wall_hours - ev.recipe(recipe).lead_hours) / (1.0 + sev.overhead(hw, 60.0))
    predicted = F.predict_scenarios(sev, row) * recipe.steps / 3600.0
    if case == "continued pre-training":   # the scenarios' run holds the pre-training too; a step does not
        assert np.all(predicted < compute * (1 - 1e-6))
    else:   # the run's compute is its training steps' and its evaluation runs' (scaled by the decode factor drawn)
        evaluation = compute - predicted
        assert np.all(evaluation > 0)
        factor = sev.value("efficiency.decode_factor", inst.efficiency.decode_factor) / inst.efficiency.decode_factor
        assert evaluation * factor == pytest.approx(np.full(len(evaluation), evaluation_hours), rel=1e-9)
