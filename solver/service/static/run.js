// planopt's page, the Run view: where a run in flight stands against its plan (POST /api/track, `planopt track
// --json`) and the best plan for its rest (POST /api/replan, `planopt replan --json`). The instance is the page's
// (picked, uploaded or pasted above); the plan is pasted, uploaded or the one the page shows; the run's log is a
// W&B history CSV or a pilot CSV, with a mapping naming its series. It shows the verdict line first, then the
// checks, the money lines and the shares, then one chart per series of the JSON's `series`: the measured points
// over the plan's predicted P10-P90 band and its P50 line. Every number is the API's; the page computes none.
// Uses page.js's helpers ($, api, fillTable, usd, hours, points, options, planText, addDownloadButtons, save).
"use strict";

const runState = { track: null, replan: null };

function setRunStatus(text, kind) {
  $("run-status").textContent = text;
  $("run-status").className = kind || "";
  document.body.dataset.state = kind || "";
}

const UNIT_FORMAT = { USD: usd, hours: hours, s: (v) => v == null ? "-" : v.toFixed(1) + " s", points: points };
const KIND_TEXT = { wandb: "a W&B history", pilot: "a pilot CSV", tensorboard: "a TensorBoard log" };
const percent = (v) => v == null ? "-" : (100 * v).toFixed(1) + " %";
const numberCell = (unit, v, key) => v == null ? { text: "-", key } : { text: UNIT_FORMAT[unit](v), value: v, key };

function parsed(id, what) {
  try { return JSON.parse($(id).value); } catch (err) { throw new Error(`${what}: not valid JSON (${err.message})`); }
}

// What /api/track and /api/replan read: the page's instance, the plan, the run's CSV text and the mapping.
function runBody() {
  const instance = parsed("instance-text", "instance");
  if (!$("run-plan").value.trim()) throw new Error("plan: paste or upload the plan the run follows (or use the plan shown)");
  const plan = parsed("run-plan", "plan");
  if (!$("run-csv").value.trim()) throw new Error("run log: paste or upload the run's CSV (a W&B history export or a pilot CSV)");
  const mapping = $("run-mapping").value.trim() ? parsed("run-mapping", "mapping") : {};
  return { instance, plan, run_csv: $("run-csv").value, mapping };
}

function useShownPlan() {
  const plan = state.result && state.result.plan;
  if (!plan) { setRunStatus("no plan shown yet: run the instance above, or paste the plan the run follows", "error"); return; }
  $("run-plan").value = JSON.stringify(plan, null, 2);
  setRunStatus("", "");
}

// --- track: the verdict, the checks, the money lines, the shares, the charts ---
function runWhere(result) {
  const s = result.state;
  const elapsed = hours(s.elapsed_hours) + (s.elapsed_measured ? "" : " (estimated: steps × mean step time)");
  return `The run (${KIND_TEXT[s.kind] || s.kind}): step ${count(s.last_step)} of ${count(s.plan_steps)} ` +
    `(${(100 * s.last_step / s.plan_steps).toFixed(0)} %), ${elapsed}, ${s.gpu_count} × ${s.gpu}.`;
}

function showChecks(result) {
  fillTable("run-checks-table", "run-checks", ["measured", "value", "P10", "P50", "P90", "where"],
    result.checks.map((c) => [c.name.replace("_", " "), numberCell(c.unit, c.measured, `checks.${c.name}.measured`),
      numberCell(c.unit, c.predicted.p10, `checks.${c.name}.p10`), numberCell(c.unit, c.predicted.p50, `checks.${c.name}.p50`),
      numberCell(c.unit, c.predicted.p90, `checks.${c.name}.p90`), { text: c.position, key: `checks.${c.name}.position` }]));
  $("run-spend-note").textContent = result.state.spend_measured ? "" : "Spend: not logged; GPUs × the plan's price × elapsed hours.";
}

function showMoney(result) {
  $("run-burn").textContent = `${usd(result.burn_usd_per_hour)}/h; committed ${usd(result.committed_usd)}; ` +
    `the run ends about ${hours(result.projected_end_hours)} from its start.`;
  fillTable("run-lines-table", "run-lines", ["line", "USD", "crossed at", "before the run ends"],
    result.lines.map((ln) => [`${ln.name} line`, numberCell("USD", ln.usd, `lines.${ln.name}.usd`),
      ln.crossing_hours == null ? "-" : { text: `day ${ln.crossing_day.toFixed(1)} (${hours(ln.crossing_hours)})`, value: ln.crossing_hours, key: `lines.${ln.name}.crossing_hours` },
      ln.crossing_hours != null && ln.crossing_hours <= result.projected_end_hours ? "yes" : "no"]));
}

function showShares(result) {
  const rows = Object.entries(result.limits).map(([name, v]) => [LIMIT_LABEL[name] || name,
    { text: percent(v.before), value: v.before, key: `limits.${name}.before` }, { text: percent(v.after), value: v.after, key: `limits.${name}.after` }]);
  const all = result.share_meeting_all_limits;
  rows.push(["every limit", { text: percent(all.before), value: all.before, key: "all.before" }, { text: percent(all.after), value: all.after, key: "all.after" }]);
  fillTable("run-shares-table", "run-shares", ["limit", "before the run", "updated by the run"], rows);
  $("run-shares-note").textContent = `${count(result.scenarios)} scenarios, updated by the run's measurements with fit's Bayes update; ` +
    `target ${(100 * result.target_share).toFixed(0)} %.`;
}

// One chart per series: the band (P90 line, then P10 filled up to it), the P50 line, the measured points, the last step.
function drawSeries(result) {
  const box = $("run-charts");
  box.replaceChildren();
  result.series.forEach((s) => {
    const id = "run-chart-" + s.name;
    const panel = document.createElement("div");
    panel.className = "panel chart-panel";
    const head = document.createElement("h2");
    head.textContent = s.label + (s.measured ? "" : " (not logged: the plan's band only)");
    const downloads = document.createElement("span");
    downloads.className = "downloads"; downloads.dataset.chart = id; downloads.dataset.table = id;
    head.appendChild(downloads);
    const chart = document.createElement("div");
    chart.id = id; chart.className = "chart run-chart"; chart.dataset.series = s.name;
    panel.append(head, chart);
    box.appendChild(panel);
    addDownloadButtons(downloads);
  });
  // drawn once every panel is in place, so that each chart takes its panel's final width
  result.series.forEach((s) => {
    const id = "run-chart-" + s.name;
    const b = s.predicted;
    const traces = [
      { x: b.step, y: b.p90, mode: "lines", line: { width: 0 }, name: "plan P90", showlegend: false, hovertemplate: "P90 %{y:.2f}<extra></extra>" },
      { x: b.step, y: b.p10, mode: "lines", line: { width: 0 }, fill: "tonexty", fillcolor: "rgba(76,114,176,0.25)", name: "plan P10–P90", hovertemplate: "P10 %{y:.2f}<extra></extra>" },
      { x: b.step, y: b.p50, mode: "lines", line: { color: "#4c72b0", width: 1.5 }, name: "plan P50", hovertemplate: "P50 %{y:.2f}<extra></extra>" },
    ];
    if (s.measured) {
      traces.push({ x: s.measured.step, y: s.measured.value, mode: "markers", marker: { color: "#c44e52", size: 5 }, name: "measured",
        hovertemplate: "step %{x}: %{y:.2f}<extra>measured</extra>" });
    }
    const last = result.state.last_step;
    Plotly.react(id, traces, { margin: { t: 10, r: 10, b: 45, l: 60 }, legend: { orientation: "h", y: -0.25 },
      xaxis: { title: { text: "step" } }, yaxis: { title: { text: s.label } },
      shapes: [{ type: "line", x0: last, x1: last, yref: "paper", y0: 0, y1: 1, line: { color: "grey", width: 1, dash: "dot" } }] },
    { displaylogo: false, responsive: true });
    const rows = b.step.map((step, i) => ["predicted", step, null, b.p10[i], b.p50[i], b.p90[i]]);
    if (s.measured) s.measured.step.forEach((step, i) => rows.push(["measured", step, s.measured.value[i], null, null, null]));
    state.tables[id] = { header: ["kind", "step", "value", "p10", "p50", "p90"], rows };
  });
}

function showTrack(result) {
  runState.track = result;
  $("run-results").hidden = false;
  $("run-verdict").textContent = result.headline;
  $("run-verdict").className = "verdict " + result.verdict.replace(" ", "-");
  $("run-where").textContent = runWhere(result);
  showChecks(result);
  showMoney(result);
  showShares(result);
  drawSeries(result);
  const all = result.share_meeting_all_limits;
  return `${result.headline}: the plan meets every limit in ${percent(all.after)} of scenarios updated by the run (${percent(all.before)} before)`;
}

async function trackRun() {
  let body;
  try { body = runBody(); } catch (err) { setRunStatus(err.message, "error"); return; }
  $("run-results").hidden = true;
  setRunStatus("tracking…", "busy");
  try { setRunStatus(showTrack(await api("POST", "/api/track", body)), "done"); } catch (err) { setRunStatus(err.message, "error"); }
}

// --- replan: the headline, the original plan continued against the replan, what changes ---
function restRow(label, o, share, key) {
  if (!o) return [label, "-", "-", "-", "-", "-", "-", "-"];
  const whole = o.whole_run || {};
  return [label, o.plan ? planText(o.plan) : "stop now", { text: usd(o.cost_usd), value: o.cost_usd, key: `${key}.cost_usd` },
    { text: hours(o.wall_hours), value: o.wall_hours, key: `${key}.wall_hours` }, { text: points(o.quality), value: o.quality, key: `${key}.quality` },
    { text: usd(whole.cost_usd), value: whole.cost_usd, key: `${key}.whole_run.cost_usd` }, hours(whole.wall_hours),
    share == null ? "-" : { text: percent(share), value: share, key: `${key}.share` }];
}

function showReplan(result) {
  runState.replan = result;
  $("replan-results").hidden = false;
  $("replan-headline").textContent = result.headline;
  const s = result.state;
  const left = Object.entries(result.remaining_limits || {}).filter(([, v]) => v != null)
    .map(([k, v]) => `${LIMIT_LABEL[k] || k} ${LIMIT_FORMAT[k] ? LIMIT_FORMAT[k](v) : v}`).join(", ");
  $("replan-where").textContent = `At step ${count(s.last_step)} of ${count(s.plan_steps)}, ${usd(s.spend_usd)} spent (sunk); ` +
    `score reached ${points(result.start_score)} (fitted; last logged ${points(result.last_measured_score)}). Left for the rest: ${left || "-"}.`;
  const shares = result.share_meeting_all_limits || {};
  fillTable("replan-table", "replan", ["rest", "plan", "rest cost", "rest hours", "quality", "run cost", "run hours", "meets every limit"],
    [restRow("original plan, continued", result.continuing, shares.continuing, "continuing"), restRow("replan", result.replan, shares.chosen, "replan")]);
  const list = $("replan-changes");
  list.replaceChildren();
  (result.changes.length ? result.changes : ["nothing"]).forEach((c) => { const li = document.createElement("li"); li.textContent = c; list.appendChild(li); });
  return result.headline;
}

async function replanRun() {
  let body, opts;
  try { body = runBody(); } catch (err) { setRunStatus(err.message, "error"); return; }
  try { opts = options(); } catch (err) { refuseField(err); setRunStatus(err.message, "error"); return; }
  $("replan-results").hidden = true;
  setRunStatus("replanning (two solves of the rest)…", "busy");
  try { setRunStatus(showReplan(await api("POST", "/api/replan", { ...body, ...opts })), "done"); } catch (err) { setRunStatus(err.message, "error"); }
}

function uploadInto(inputId, textId) {
  const file = $(inputId).files[0];
  if (file) file.text().then((text) => { $(textId).value = text; });
}

document.addEventListener("DOMContentLoaded", () => {
  $("use-plan").addEventListener("click", useShownPlan);
  $("run-plan-upload").addEventListener("change", () => uploadInto("run-plan-upload", "run-plan"));
  $("run-csv-upload").addEventListener("change", () => uploadInto("run-csv-upload", "run-csv"));
  $("run-mapping-upload").addEventListener("change", () => uploadInto("run-mapping-upload", "run-mapping"));
  $("track").addEventListener("click", trackRun);
  $("replan").addEventListener("click", replanRun);
  $("download-track-json").onclick = () => save("planopt-track.json", JSON.stringify(runState.track, null, 2), "application/json");
  $("download-replan-json").onclick = () => save("planopt-replan.json", JSON.stringify(runState.replan, null, 2), "application/json");
});
