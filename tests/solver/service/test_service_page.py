"""The page, driven in headless Chromium against a real `planopt serve`: a shipped instance loaded,
solved (as jobs of the service), and the plan, the limits and the frontier shown with the numbers the
API returns (labelled in words, with each offer's provider, tier and $/GPU-hour, and the alert day); a
frontier point opened by a click and judged against the run's limits; the run found again among the recent
jobs, named by its instance; a confidence solve's shares, limits and expected cost; a share typed into the
percentage field refused; an infeasible run's relaxations applied in one click; a plan's environment pool and
its money; a portfolio's procurement
(merged over consecutive buckets) and Gantt chart; the Run view tracking the shipped slow run (its verdict, checks
and one chart per series of the API's bands and measured points) and replanning it. Screenshots land in the test's temporary folder.

Debian's ``chromium`` and ``chromium-driver`` (``.ci/run`` installs them). The test skips only when
they are missing on a developer's machine; under CI (``CI`` set) a missing browser fails it.
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support.common import INSTANCES
from tests.support.service_server import TOKEN, Server

RUN = INSTANCES / "runs" / "qwen3-8b-math-slow"
CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
HAVE_BROWSER = CHROMIUM.exists() and CHROMEDRIVER.exists()
# Waits for the page (solves run on a shared 2-core machine); a hang fails instead of stalling CI.
WAIT_SECONDS = 180

# a browser and a real server: run by .ci/run with `pytest -m slow`
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not HAVE_BROWSER and not os.environ.get("CI"),
                                 reason="Debian's chromium and chromium-driver are not installed (CI installs them)")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = Server(tmp_path_factory.mktemp("page")).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    profile = tempfile.mkdtemp(prefix="planopt-chromium-")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # the console: CSP violations show there
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,2400",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait(driver, condition):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(driver, WAIT_SECONDS).until(condition)


def load(driver, server, name: str, fill=None):
    """A fresh page with the shipped instance ``name`` picked and the fields of ``fill`` typed in."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select
    driver.get("about:blank")  # a fresh page: only the fragment would differ, and that does not reload
    driver.get(f"{server.url}/#token={TOKEN}")
    wait(driver, lambda d: len(Select(d.find_element(By.ID, "shipped")).options) > 1)
    Select(driver.find_element(By.ID, "shipped")).select_by_value(name)
    wait(driver, lambda d: d.find_element(By.ID, "instance-text").get_property("value").startswith("{"))  # a fresh page's is empty
    for field, value in (fill or {}).items():
        driver.find_element(By.ID, field).clear()
        driver.find_element(By.ID, field).send_keys(str(value))


def run_page(driver, click_id: str = "run"):
    """Click ``click_id`` (a button's id: Run, Track, Replan; or the data-key of a button the page drew) and wait
    until the run is done."""
    from selenium.webdriver.common.by import By
    driver.execute_script("document.body.dataset.state = 'clicked'")  # so a wait cannot see the last run's "done"
    if driver.find_elements(By.ID, click_id):  # Run, Track, Replan
        driver.find_element(By.ID, click_id).click()
    else:  # a button the page drew, by its data-key
        driver.find_element(By.CSS_SELECTOR, f'button[data-key="{click_id}"]').click()
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") in ("done", "error"))
    assert driver.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "done", \
        driver.find_element(By.ID, "status").text


def load_and_run(driver, server, name: str, fill=None):
    load(driver, server, name, fill)
    run_page(driver)


def latest_job(server, kind: str) -> dict:
    """The newest job of ``kind`` in the service's store, with its result: the API's answer the page was given."""
    found = next(j for j in server.call("GET", "/api/jobs") if j["kind"] == kind)
    return server.call("GET", f"/api/jobs/{found['id']}")


def cell_values(driver, table_id: str) -> dict[str, float]:
    from selenium.webdriver.common.by import By
    return {td.get_attribute("data-key"): float(td.get_attribute("data-value"))
            for td in driver.find_elements(By.CSS_SELECTOR, f"#{table_id} td[data-value][data-key]")}


def test_the_page_solves_a_shipped_instance_and_shows_the_apis_plan_and_frontier(server, browser, tmp_path):
    from selenium.webdriver.common.by import By
    load_and_run(browser, server, "tiny", fill={"budget_usd": 900})
    api = server.call("POST", "/api/solve", {"instance": "tiny", "budget_usd": 900})
    front = server.call("POST", "/api/frontier", {"instance": "tiny", "budget_usd": 900})
    browser.save_screenshot(str(tmp_path / "solve.png"))
    # the plan and its numbers are the API's
    plan = {td.get_attribute("data-key"): td.text for td in browser.find_elements(By.CSS_SELECTOR, "#plan-table td[data-key]")}
    stage = api["plan"]["stages"][0]
    assert plan["method"] == stage["method"] and plan["gpu"] == stage["gpu"]
    assert int(plan["gpu_count"]) == stage["gpu_count"] and int(plan["steps"]) == stage["steps"]
    # each row is labelled in words, not by the JSON's key (which stays in the value's data-key)
    for tr in browser.find_elements(By.CSS_SELECTOR, "#plan-table tbody tr"):
        label, value = tr.find_elements(By.TAG_NAME, "td")
        key = value.get_attribute("data-key")
        assert not any(c in label.text for c in "_.") and ("_" not in key or label.text != key), (label.text, key)
    # where the GPUs are bought: the provider, region, tier and $/GPU-hour of each of the API's offers
    assert api["offers"]
    for n, offer in enumerate(api["offers"]):
        assert plan[f"offers.{n}.provider"] == f"{offer['provider']} {offer['region']}"
        assert plan[f"offers.{n}.tier"] == offer["tier"].replace("_", "-")
        price = browser.find_element(By.CSS_SELECTOR, f'#plan-table td[data-key="offers.{n}.usd_per_gpu_hour"]')
        assert float(price.get_attribute("data-value")) == offer["usd_per_gpu_hour"]
        assert price.text.startswith(f"${offer['usd_per_gpu_hour']:,.2f}")
    # the planned spend's alert line: the day the cumulative spend crosses it
    alert = api["spend"]["lines"]["alert"]
    assert alert["reached"] is not None
    assert f"alert line ${alert['usd']:,.2f}" in browser.find_element(By.ID, "spend-line").text
    assert f"reached on day {alert['reached']['day']}" in browser.find_element(By.ID, "spend-line").text
    shown = cell_values(browser, "metrics-table")
    for key in ("cost_usd", "wall_hours", "quality", "forgetting_points"):
        assert shown[key] == pytest.approx(api["metrics"][key], rel=1e-12), key
    assert f"${api['metrics']['cost_usd']:,.2f}" in browser.find_element(By.ID, "metrics-table").text
    # binding limits: the rows the API marks binding are the ones the page marks
    binding_rows = browser.find_elements(By.CSS_SELECTOR, "#binding-table tr.binding")
    assert len(binding_rows) == sum(b["binding"] for b in api["binding"]) >= 1
    # the breakdown charts plot the API's components
    costs = browser.execute_script("return document.getElementById('cost-chart').data[0].y")
    assert costs == pytest.approx(list(api["cost_breakdown_usd"].values()))
    # the key quantities and the fixed vs elastic split are the API's
    quantities = cell_values(browser, "quantities-table")
    assert quantities == pytest.approx({k: v for k, v in api["quantities"].items() if v}, rel=1e-12)
    assert f"${api['cost_split_usd']['fixed']:,.2f}" in browser.find_element(By.ID, "cost-split").text
    # the frontier: the API's points, in the chart and in its table
    xs = browser.execute_script("return document.getElementById('frontier-chart').data[0].x")
    ys = browser.execute_script("return document.getElementById('frontier-chart').data[0].y")
    assert xs == pytest.approx([p["cost_usd"] for p in front["points"]]) and len(xs) >= 2
    assert ys == pytest.approx([p["quality"] for p in front["points"]])
    rows = browser.find_elements(By.CSS_SELECTOR, "#frontier-table tbody tr")
    assert len(rows) == len(front["points"])
    # its downloads: the CSV holds the API's numbers, the chart renders to PNG and SVG
    csv = browser.execute_script("return csv('frontier')").splitlines()
    assert len(csv) == len(front["points"]) + 1 and float(csv[1].split(",")[1]) == front["points"][0]["cost_usd"]
    for fmt, head in (("png", "data:image/png;base64,"), ("svg", "data:image/svg+xml,")):
        image = browser.execute_async_script(
            "const done = arguments[arguments.length - 1];"
            f"Plotly.toImage('frontier-chart', {{format: '{fmt}', width: 800, height: 400}}).then(done, (e) => done('error: ' + e));")
        assert image.startswith(head) and len(image) > 1000, image[:80]
    # clicking a frontier point opens its plan, evaluated by the API
    rows[0].click()
    wait(browser, lambda d: "#1" in d.find_element(By.ID, "shown-plan-note").text)
    assert cell_values(browser, "metrics-table")["cost_usd"] == pytest.approx(front["points"][0]["cost_usd"], rel=1e-12)
    browser.save_screenshot(str(tmp_path / "frontier-point.png"))
    assert (tmp_path / "solve.png").stat().st_size > 10_000
    # the run was two jobs of the service (kept in its store); clicking the solve shows its plan again
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#jobs-history tbody tr")) >= 2)
    history = browser.find_elements(By.CSS_SELECTOR, "#jobs-history tbody tr")
    kinds = [row.find_elements(By.TAG_NAME, "td")[2].text for row in history[:2]]
    assert kinds == ["frontier", "solve"] and all(r.find_elements(By.TAG_NAME, "td")[3].text == "done" for r in history[:2])
    # each named by its instance (the `name` field of the instance the page sent)
    name = server.call("GET", "/api/instances/tiny")["name"]
    assert [row.find_elements(By.TAG_NAME, "td")[1].text for row in history[:2]] == [name, name]
    history[1].click()
    wait(browser, lambda d: d.find_element(By.ID, "status").text.startswith(f"job {name} (solve)"))
    assert cell_values(browser, "metrics-table")["cost_usd"] == pytest.approx(api["metrics"]["cost_usd"], rel=1e-12)


def test_the_page_shows_the_pool_a_plans_environments_run_on_and_its_money(server, browser):
    """Issue 27, lever 1: the plan's environment pool among its choices (labelled in words), and the API's
    environments row: its workers and what the pool and the traffic cost."""
    from selenium.webdriver.common.by import By
    name = "qwen3-32b-agentic-rl-environments"
    load_and_run(browser, server, name)
    api = latest_job(server, "solve")["result"]
    plan = {td.get_attribute("data-key"): td.text for td in browser.find_elements(By.CSS_SELECTOR, "#plan-table td[data-key]")}
    assert plan["environment_pool"] == api["plan"]["stages"][0]["environment_pool"] == "fargate-2048"
    env = api["environments"][0]
    values = cell_values(browser, "plan-table")
    assert values["environments.0.workers"] == env["workers"] == 2048
    assert values["environments.0.usd"] == pytest.approx(env["pool_usd"] + env["traffic_usd"] + env["sandbox_usd"], rel=1e-12)
    for tr in browser.find_elements(By.CSS_SELECTOR, "#plan-table tbody tr"):
        label, value = tr.find_elements(By.TAG_NAME, "td")
        assert not any(c in label.text for c in "_."), label.text


def test_the_page_refuses_a_share_as_a_percentage_and_shows_a_confidence_solves_shares(server, browser, tmp_path):
    """"% of scenarios" holds a percentage: 0.9 is refused, naming the 90 % meant, and nothing is submitted. At 90 %,
    the Limits table holds every limit of the run with its expected value and the share of fresh scenarios meeting
    it, the in-sample and out-of-sample shares are shown, and the expected cost (the objective) replaces the point
    cost. A frontier point is then judged against the run's minimum quality (34), not the instance file's (38)."""
    from selenium.webdriver.common.by import By
    load(browser, server, "tiny", fill={"confidence": 0.9, "min_quality": 34})
    jobs_before = len(server.call("GET", "/api/jobs"))
    browser.find_element(By.ID, "run").click()
    status = browser.find_element(By.ID, "status").text
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "error"
    assert status.startswith("Confidence: ") and "did you mean 90 %?" in status, status
    assert browser.find_element(By.ID, "confidence").get_attribute("aria-invalid") == "true"
    for typed, word in (("100", "strictly between 0 and 100"), ("-5", "strictly between 0 and 100")):
        browser.find_element(By.ID, "confidence").clear()
        browser.find_element(By.ID, "confidence").send_keys(typed)
        browser.find_element(By.ID, "run").click()
        assert word in browser.find_element(By.ID, "status").text, typed
    assert len(server.call("GET", "/api/jobs")) == jobs_before  # refused on the page: no job submitted

    browser.find_element(By.ID, "confidence").clear()
    browser.find_element(By.ID, "confidence").send_keys("90")
    run_page(browser)
    browser.save_screenshot(str(tmp_path / "confidence.png"))
    solve = latest_job(server, "solve")
    assert server.call("GET", f"/api/jobs/{solve['id']}/request")["options"]["confidence"] == pytest.approx(0.9)
    api, risk = solve["result"], solve["result"]["risk"]
    assert risk["objective_measure"] == "expected" and "binding" not in api
    # the shares, in sample and out of sample
    for key in ("in_sample_share", "out_of_sample_share"):
        assert browser.find_element(By.CSS_SELECTOR, f'#risk-line span[data-key="{key}"]').text == f"{100 * risk[key]:.1f} %"
    # the Limits table: the run's limits (the instance's, min_quality from the field), their means and fresh shares
    limits = cell_values(browser, "binding-table")
    instance = server.call("GET", "/api/instances/tiny")
    expected_limits = {**instance["constraints"], "min_quality": 34}
    metric = {"deadline_hours": "wall_hours", "max_forgetting_points": "forgetting_points", "min_quality": "quality"}
    for name, value in expected_limits.items():
        if name in metric:
            assert limits[f"limit.{name}"] == value, name
            assert limits[f"expected.{name}"] == pytest.approx(risk["expected"][metric[name]], rel=1e-12), name
            assert limits[f"share.{name}"] == pytest.approx(risk["out_of_sample_limits"][name], rel=1e-12), name
    # the expected cost, not the point cost
    shown = cell_values(browser, "metrics-table")
    assert "cost_usd" not in shown and shown["expected.cost_usd"] == pytest.approx(risk["expected"]["cost_usd"], rel=1e-12)
    assert f"expected ${risk['expected']['cost_usd']:,.2f}" in browser.find_element(By.ID, "status").text

    # a frontier point below the instance's own minimum quality but above the run's: judged against the run's
    front = latest_job(server, "frontier")["result"]
    below = [i for i, p in enumerate(front["points"]) if 34 <= p["quality"] < instance["constraints"]["min_quality"]]
    assert below, [p["quality"] for p in front["points"]]
    point = front["points"][below[-1]]
    judged = {m: server.call("POST", "/api/evaluate", {"instance": {**instance, "constraints": {**instance["constraints"], "min_quality": m}},
                                                      "plan": point["plan"]})["feasible"] for m in (34, instance["constraints"]["min_quality"])}
    assert judged == {34: True, instance["constraints"]["min_quality"]: False}
    browser.find_elements(By.CSS_SELECTOR, "#frontier-table tbody tr")[below[-1]].click()
    wait(browser, lambda d: f"#{below[-1] + 1}" in d.find_element(By.ID, "shown-plan-note").text)
    assert browser.find_element(By.CSS_SELECTOR, '#binding-table td[data-key="feasible"]').text == "yes"
    assert "minimum quality 34.00" in browser.find_element(By.CSS_SELECTOR, '#binding-table td[data-key="limits"]').text


def test_an_infeasible_run_shows_its_relaxations_each_applied_in_one_click(server, browser, tmp_path):
    """infeasible-deadline.json: no plan meets its deadline; the page lists the solve's relaxations, and Apply puts the
    relaxed value into the limit's field and runs again, which finds a plan within it."""
    from selenium.webdriver.common.by import By
    load_and_run(browser, server, "infeasible-deadline")
    browser.save_screenshot(str(tmp_path / "infeasible.png"))
    api = latest_job(server, "solve")["result"]
    assert api["status"] == "infeasible" and api["relaxations"]
    assert browser.find_element(By.ID, "status").text.startswith("infeasible")
    assert browser.find_element(By.ID, "infeasible").is_displayed() and not browser.find_element(By.ID, "job-results").is_displayed()
    shown = cell_values(browser, "relaxations-table")
    assert shown == {f"required.{r['constraint']}": pytest.approx(r["required"], rel=1e-12) for r in api["relaxations"]}
    first = api["relaxations"][0]
    assert not first["together"] and first["constraint"] == "deadline_hours"
    run_page(browser, "apply.0")
    assert float(browser.find_element(By.ID, "deadline_hours").get_property("value")) == first["required"]
    again = latest_job(server, "solve")
    assert server.call("GET", f"/api/jobs/{again['id']}/request")["options"]["deadline_hours"] == first["required"]
    assert again["result"]["status"] == "optimal" and again["result"]["metrics"]["wall_hours"] <= first["required"]
    assert browser.find_element(By.ID, "status").text.startswith("optimal")
    assert not browser.find_element(By.ID, "infeasible").is_displayed()


def test_a_job_no_hardware_holds_shows_the_hardware_changes_that_would(server, browser):
    """A 70B full fine-tune on one H100 (issue 27, lever 8): the page lists the solve's hardware changes, each with
    what to set and where it then fits, and offers no Apply (they change the instance, not a limit)."""
    import json
    from selenium.webdriver.common.by import By
    from tests.support.common import INSTANCES
    data = json.loads((INSTANCES / "tiny.json").read_text())
    data.update(student={"preset": "Llama-3.1-70B"}, hardware={"gpus": [{"name": "H100-SXM", "counts": [1]}]})
    data["teacher"]["architecture"] = {"preset": "Llama-3.1-70B"}
    load_and_run(browser, server, "tiny")
    browser.execute_script("document.getElementById('instance-text').value = arguments[0]", json.dumps(data))
    run_page(browser)
    api = latest_job(server, "solve")["result"]
    assert api["status"] == "infeasible" and api["relaxations"] and all(r["kind"] == "hardware" for r in api["relaxations"])
    table = browser.find_element(By.ID, "relaxations-table")
    for r in api["relaxations"]:
        cell = table.find_element(By.CSS_SELECTOR, f'td[data-key="required.{r["constraint"]}"]')
        assert cell.text == r["change"]
        assert r["text"] in table.text
    assert not table.find_elements(By.TAG_NAME, "button")


def merged_purchases(procurement: list[dict]) -> set[tuple]:
    """The API's procurement rows with runs of consecutive buckets of one purchase (offer, tier, term, GPU count)
    as one (provider, gpu, tier, gpus, first bucket, last bucket)."""
    buckets: dict[tuple, set[int]] = {}
    for p in procurement:
        key = (p["provider"] + (" " + p["region"] if p["region"] else ""), p["gpu"], p["tier"].replace("_", "-"), p["term"], p["gpus"])
        buckets.setdefault(key, set()).update(range(p["start_bucket"], p["end_bucket"] + 1))
    out = set()
    for (seller, gpu, tier, _, gpus), held in buckets.items():
        ordered = sorted(held)
        first = ordered[0]
        for b, after in zip(ordered, ordered[1:] + [None]):
            if after != b + 1:
                out.add((seller, gpu, tier, gpus, first, b))
                first = after
    return out


def test_the_page_shows_a_portfolios_procurement_and_gantt_chart(server, browser, tmp_path):
    """portfolio-providers buys Lambda's H100s on demand in buckets 0-6 and Nebius's spot H100s in 0-3 and 8 (README):
    one procurement row per run of consecutive buckets, not one per bucket."""
    from selenium.webdriver.common.by import By
    load_and_run(browser, server, "portfolio-providers")
    api = latest_job(server, "portfolio")["result"]
    browser.save_screenshot(str(tmp_path / "portfolio.png"))
    rows = [[td.text for td in tr.find_elements(By.TAG_NAME, "td")]
            for tr in browser.find_elements(By.CSS_SELECTOR, "#procurement-table tbody tr")]
    shown = {(r[0], r[1], r[2], int(r[3]), int(r[4]), int(r[5])) for r in rows}
    assert len(shown) == len(rows) and shown == merged_purchases(api["procurement"])
    assert len(rows) < len(api["procurement"])  # the instance buys one offer over several consecutive buckets
    held = sum(p["gpus"] * (p["end_bucket"] - p["start_bucket"] + 1) for p in api["procurement"])
    assert sum(s[3] * (s[5] - s[4] + 1) for s in shown) == held
    bars = browser.execute_script("return document.getElementById('gantt-chart').data.map(t => t.x.length)")
    assert sum(bars) == sum(len(j["schedule"]) for j in api["jobs"]) > 0


def test_the_gantt_chart_gives_each_gang_of_a_layered_job_its_row(server, browser):
    """portfolio-layered (README): the staged job's SFT and RL stages, and the OPD job's teacher and its own stage,
    are rows of their own named after the stage; a job of one gang keeps its name; the schedule's CSV rows carry
    each row's stage and role."""
    load_and_run(browser, server, "portfolio-layered")
    api = latest_job(server, "portfolio")["result"]
    rows = browser.execute_script("return document.getElementById('gantt-chart').data.flatMap(t => t.y)")
    want = []
    for job in api["jobs"]:
        for s in job["schedule"]:
            if len(job["gangs"]) < 2:
                want.append(job["name"])
            else:
                who = "teacher" if s["stage"] is None else f"stage {s['stage']}"
                role = "" if s["role"] in ("training", "teacher") else " " + s["role"].replace("teacher_", "")
                want.append(f"{job['name']} · {who}{role}")
    assert sorted(rows) == sorted(want)
    assert any(" · teacher" in r for r in rows) and any(" · stage 2" in r for r in rows), rows
    table = browser.execute_script("return state.tables.schedule")
    assert table["header"][:3] == ["job", "stage", "role"]
    assert sorted((r[0], r[2]) for r in table["rows"]) == sorted((j["name"], s["role"]) for j in api["jobs"] for s in j["schedule"])


def test_the_plotting_library_comes_from_the_service_not_the_internet(server, browser):
    """Every script of the page, plotly.js included, is the service's own (the test loads the page itself, so it
    holds when run alone)."""
    load(browser, server, "tiny")
    scripts = browser.execute_script("return [...document.scripts].map(s => s.src)")
    assert scripts and all(src.startswith(server.url) for src in scripts if src)
    assert browser.execute_script("return typeof Plotly") == "object"


def test_the_page_sends_a_portfolio_its_budget_and_says_what_it_did_not_send(server, browser):
    """A portfolio takes the page's budget (its total spend; under the least cost it is infeasible) and
    not a single job's limits, which the status line names."""
    from selenium.webdriver.common.by import By
    load_and_run(browser, server, "portfolio-small", fill={"budget_usd": 20000, "min_quality": 10})
    status = browser.find_element(By.ID, "status").text
    api = server.call("POST", "/api/portfolio/solve", {"portfolio": "portfolio-small", "budget_usd": 20000})
    assert api["status"] == "infeasible" and status.startswith("infeasible"), status
    assert "not sent: min_quality" in status, status


def test_the_page_works_under_its_content_security_policy(server, browser):
    """The page is served with a Content-Security-Policy (only its own scripts, nothing framing it), nosniff and
    X-Frame-Options; a solve, its charts and an image export run under it with no violation in the console."""
    from selenium.webdriver.common.by import By
    status, _ = server.request("GET", "/", token=None)
    headers = {k.lower(): v for k, v in server.last_headers.items()}
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
    browser.get_log("browser")  # what earlier tests left
    load_and_run(browser, server, "tiny", fill={"budget_usd": 900})
    assert browser.execute_script("return document.getElementById('cost-chart').data[0].y.length") > 0
    image = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Plotly.toImage('cost-chart', {format: 'png', width: 400, height: 300}).then(done, (e) => done('error: ' + e));")
    assert image.startswith("data:image/png;base64,"), image[:80]
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "done"
    violations = [e["message"] for e in browser.get_log("browser")
                  if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]
    assert not violations, violations


def test_the_run_view_tracks_a_run_and_draws_each_series_over_the_plans_band(server, browser, tmp_path):
    """The Run view (issue 26 item 4): the shipped slow run's ``wandb.csv`` and ``mapping.json`` uploaded and its
    ``plan.json`` pasted beside the instance it follows (shipped as ``qwen3-8b-math``). Track shows the API's verdict
    line first, then its checks, then one chart per series of the JSON's ``series``: the plan's P10-P90 band (filled),
    its P50 line and the measured points, each the API's numbers. A mapping naming a series the log lacks gets the
    API's one line; Replan (with the Limits' minimum quality) shows the API's headline and what changes; no
    Content-Security-Policy violation on the way."""
    import json
    from selenium.webdriver.common.by import By
    browser.get_log("browser")  # what earlier tests left
    load(browser, server, "qwen3-8b-math")
    assert server.call("GET", "/api/instances/qwen3-8b-math") == json.loads((RUN / "instance.json").read_text())
    browser.find_element(By.ID, "track").click()  # nothing pasted yet: said on the page, nothing posted
    assert browser.find_element(By.ID, "run-status").text.startswith("plan: paste or upload the plan the run follows")
    browser.find_element(By.ID, "use-plan").click()  # no plan shown yet on a fresh page
    assert browser.find_element(By.ID, "run-status").text.startswith("no plan shown yet")
    browser.execute_script("document.getElementById('run-plan').value = arguments[0]", (RUN / "plan.json").read_text())
    browser.find_element(By.ID, "run-csv-upload").send_keys(str(RUN / "wandb.csv"))
    browser.find_element(By.ID, "run-mapping-upload").send_keys(str(RUN / "mapping.json"))
    wait(browser, lambda d: d.find_element(By.ID, "run-csv").get_property("value") == (RUN / "wandb.csv").read_text()
         and d.find_element(By.ID, "run-mapping").get_property("value") == (RUN / "mapping.json").read_text())
    run_page(browser, "track")
    browser.save_screenshot(str(tmp_path / "run.png"))
    body = {"instance": "qwen3-8b-math", "plan": json.loads((RUN / "plan.json").read_text()),
            "run_csv": (RUN / "wandb.csv").read_text(), "mapping": json.loads((RUN / "mapping.json").read_text())}
    api = server.call("POST", "/api/track", body)
    # the verdict line first, then the checks table, then the charts
    verdict = browser.find_element(By.ID, "run-verdict")
    assert verdict.text == api["headline"] == "off track: min_quality"
    order = browser.execute_script(
        "const ids = ['run-verdict', 'run-checks-table', 'run-charts'].map((i) => document.getElementById(i));"
        "return ids.slice(1).map((e, n) => !!(ids[n].compareDocumentPosition(e) & Node.DOCUMENT_POSITION_FOLLOWING));")
    assert order == [True, True]
    shown = cell_values(browser, "run-checks-table")
    for c in api["checks"]:
        for q in ("p10", "p50", "p90"):
            assert shown[f"checks.{c['name']}.{q}"] == pytest.approx(c["predicted"][q], rel=1e-12), (c["name"], q)
        assert shown[f"checks.{c['name']}.measured"] == pytest.approx(c["measured"], rel=1e-12), c["name"]
    assert cell_values(browser, "run-shares-table")["all.after"] == pytest.approx(api["share_meeting_all_limits"]["after"])
    # one chart per series: the band (P90, P10 filled up to it), the P50 line, the measured points: the API's
    charts = browser.find_elements(By.CSS_SELECTOR, "#run-charts .run-chart")
    assert [c.get_attribute("data-series") for c in charts] == [s["name"] for s in api["series"]] \
        == ["step_seconds", "task_score", "forgetting"]
    for s in api["series"]:
        traces = browser.execute_script("return document.getElementById(arguments[0]).data"
                                        ".map((t) => ({name: t.name, x: t.x, y: t.y, fill: t.fill || null}))",
                                        f"run-chart-{s['name']}")
        by_name = {t["name"]: t for t in traces}
        band = s["predicted"]
        for name, q in (("plan P90", "p90"), ("plan P10–P90", "p10"), ("plan P50", "p50")):
            assert by_name[name]["x"] == band["step"] and by_name[name]["y"] == pytest.approx(band[q], rel=1e-12), (s["name"], q)
        assert by_name["plan P10–P90"]["fill"] == "tonexty"
        assert by_name["measured"]["x"] == s["measured"]["step"]
        assert by_name["measured"]["y"] == pytest.approx(s["measured"]["value"], rel=1e-12)
    image = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "Plotly.toImage('run-chart-task_score', {format: 'png', width: 600, height: 300}).then(done, (e) => done('error: ' + e));")
    assert image.startswith("data:image/png;base64,") and len(image) > 1000, image[:80]

    # a mapping naming a series the log does not hold: the API's one line, on the page
    browser.execute_script("document.getElementById('run-mapping').value = arguments[0]",
                           json.dumps({**body["mapping"], "task_score": "eval/math"}))
    browser.execute_script("document.body.dataset.state = 'clicked'")
    browser.find_element(By.ID, "track").click()
    wait(browser, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-state") == "error")
    assert "did you mean 'eval/math500'" in browser.find_element(By.ID, "run-status").text

    # Replan: the rest of the run under the Limits' minimum quality, the API's headline and changes
    browser.execute_script("document.getElementById('run-mapping').value = arguments[0]", json.dumps(body["mapping"]))
    browser.find_element(By.ID, "min_quality").send_keys("65")
    run_page(browser, "replan")
    browser.save_screenshot(str(tmp_path / "replan.png"))
    replan = server.call("POST", "/api/replan", {**body, "min_quality": 65})
    assert browser.find_element(By.ID, "replan-headline").text == replan["headline"]
    assert [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#replan-changes li")] == (replan["changes"] or ["nothing"])
    assert cell_values(browser, "replan-table")["replan.cost_usd"] == pytest.approx(replan["replan"]["cost_usd"], rel=1e-12)
    # all of it under the page's Content-Security-Policy
    violations = [e["message"] for e in browser.get_log("browser")
                  if "Content Security Policy" in e["message"] or "Refused to" in e["message"]]
    assert not violations, violations
