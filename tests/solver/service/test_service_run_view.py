"""The page's Run view (issue 26 item 4), in process: the page and its script carry the view (the plan, run-log and
mapping inputs, Track and Replan posting to ``/api/track`` and ``/api/replan``, the verdict before the checks before
the charts), and the JSON the view reads, ``/api/track``'s answer, carries each measured series over the plan's
predicted P10-P50-P90 at each band step: the numbers ``track`` itself computes on the shipped slow run
(``instances/runs/qwen3-8b-math-slow/``), with no NaN or Infinity. The page driven in Chromium is in
test_service_page.py."""

import json

import pytest

from planopt.instance import evaluate_given_plan, load_instance
from planopt.models.cost.evaluator import Evaluator
from planopt.runs.readers import read_run
from planopt.runs.state import read_mapping, run_state
from planopt.runs.track import bands_frame, track
from planopt.service.app import create_app
from planopt.service.jobs import run_request
from planopt.service.settings import Principal, Settings
from tests.support.asgi import call
from tests.support.common import INSTANCES

TOKEN = "in-process-token-0123456789"
RUN = INSTANCES / "runs" / "qwen3-8b-math-slow"


class InProcessRunner:
    """The cluster as a synchronous endpoint sees it, doing the work here (``jobs.run_request``, as a worker does)."""

    def submit_request(self, kind, instance, options):
        return run_request(kind, instance, options)

    async def wait(self, future):
        return future


@pytest.fixture
def app():
    app = create_app(Settings(principals={TOKEN: Principal("admin", "admin")}))
    app.fastapi.state.runner = InProcessRunner()
    return app


def test_the_page_and_its_script_carry_the_run_view(app):
    status, _, page = call(app, "GET", "/")
    page = page.decode()
    assert status == 200 and '<script src="/static/run.js" defer></script>' in page
    for element in ("run-plan", "run-plan-upload", "use-plan", "run-csv", "run-csv-upload", "run-mapping",
                    "run-mapping-upload", "track", "replan", "run-status", "run-verdict", "run-checks-table",
                    "run-lines-table", "run-shares-table", "run-charts", "replan-headline", "replan-table", "replan-changes"):
        assert f'id="{element}"' in page, element
    # the verdict line first, then the table, then the charts
    assert page.index('id="run-verdict"') < page.index('id="run-checks-table"') < page.index('id="run-charts"')
    status, headers, script = call(app, "GET", "/static/run.js")
    script = script.decode()
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    assert 'api("POST", "/api/track", body)' in script and 'api("POST", "/api/replan",' in script
    # a chart per series of the answer's `series`: its band filled between P10 and P90, its P50, its measured points
    assert "result.series.forEach" in script and 'fill: "tonexty"' in script
    for field in ("b.p10", "b.p50", "b.p90", "s.measured.step", "s.measured.value"):
        assert field in script, field


def test_the_json_the_run_view_reads_carries_each_series_over_the_plans_band(app):
    body = {"instance": json.loads((RUN / "instance.json").read_text()), "plan": json.loads((RUN / "plan.json").read_text()),
            "run_csv": (RUN / "wandb.csv").read_text(), "mapping": json.loads((RUN / "mapping.json").read_text())}
    status, _, answer = call(app, "POST", "/api/track", body, token=TOKEN)
    assert status == 200, answer
    json.dumps(answer, allow_nan=False)  # strict JSON: no NaN, no Infinity
    # track's own computation on the shipped run: its state, and the bands of the prior's scenarios along the plan
    inst = load_instance(RUN / "instance.json")
    plan, _ = evaluate_given_plan(inst, body["plan"], "plan.json")
    state = run_state(read_run(RUN / "wandb.csv"), read_mapping(RUN / "mapping.json"), inst, plan, Evaluator(inst))
    result = track(inst, plan, state)
    assert answer["headline"] == result.headline == "off track: min_quality"
    bands = bands_frame(result.scenario_evaluator, plan)
    base = inst.task.general_score_baseline
    measured = {"step_seconds": (state.step_seconds.steps, state.step_seconds.values),
                "task_score": (state.task_score.steps, state.task_score.values),
                "forgetting": (state.general_score.steps, base - state.general_score.values)}
    assert [s["name"] for s in answer["series"]] == list(measured)
    for s in answer["series"]:
        band = bands[bands["series"] == s["name"]]
        assert s["predicted"]["step"] == band["step"].tolist() and len(band) >= 30
        assert s["predicted"]["step"][0] == 1 and s["predicted"]["step"][-1] == plan.stages[0].recipe.steps
        for q in ("p10", "p50", "p90"):
            assert s["predicted"][q] == pytest.approx(band[q].tolist(), rel=1e-12), (s["name"], q)
        assert all(lo <= mid <= hi for lo, mid, hi in zip(s["predicted"]["p10"], s["predicted"]["p50"], s["predicted"]["p90"]))
        steps, values = measured[s["name"]]
        assert s["measured"]["step"] == steps.tolist() and s["measured"]["value"] == pytest.approx(values.tolist(), rel=1e-12)
    assert len(answer["series"][0]["measured"]["step"]) == 80 and answer["series"][0]["unit"] == "s"
