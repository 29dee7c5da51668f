// planopt's page: pick or paste an instance, set the limits, run, see the plan, its breakdowns,
// its binding limits and the cost-quality frontier (or a portfolio's procurement and schedule).
// Every number shown comes from the API's JSON (the CLI's); the page computes none of its own.
"use strict";

const $ = (id) => document.getElementById(id);
const LIMITS = ["budget_usd", "deadline_hours", "max_forgetting_points", "min_quality"];
const state = { instance: null, result: null, frontier: null, portfolio: null, tables: {} };

// --- the token: from the address's #token=... (never sent to the server in a URL), kept for this tab ---
function readToken() {
  const match = location.hash.match(/token=([^&]+)/);
  if (match) {
    sessionStorage.setItem("planopt-token", decodeURIComponent(match[1]));
    history.replaceState(null, "", location.pathname);
  }
  $("token").value = sessionStorage.getItem("planopt-token") || "";
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: { "Content-Type": "application/json", "Authorization": "Bearer " + $("token").value.trim() },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function setStatus(text, kind) {
  $("status").textContent = text;
  $("status").className = kind || "";
  document.body.dataset.state = kind || "";
}

// --- formatting: units in the labels, numbers as the CLI prints them ---
const usd = (v) => v == null ? "-" : "$" + v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
const hours = (v) => v == null ? "-" : v.toLocaleString("en-US", { maximumFractionDigits: 2 }) + " h";
const points = (v) => v == null ? "-" : v.toFixed(2);
const METRICS = [
  ["cost_usd", "cost", usd], ["wall_hours", "wall time", hours], ["quality", "quality (points)", points],
  ["forgetting_points", "forgetting (points)", points], ["gpu_hours", "GPU-hours", (v) => v == null ? "-" : v.toFixed(1)],
  ["memory_per_gpu_gb", "memory per GPU (GB)", (v) => v == null ? "-" : v.toFixed(1)],
];
const LIMIT_FORMAT = { budget_usd: usd, deadline_hours: hours, max_forgetting_points: points, min_quality: points };

// A plan is {student, stages: [...], checkpoint_interval_minutes} (a single job's) or one stage's
// fields with its interval (a portfolio job's).
function stageText(stage) {
  const parts = [`${stage.method.toUpperCase()} on ${stage.gpu_count} × ${stage.gpu}`, `${stage.steps.toLocaleString("en-US")} steps`];
  if (stage.rollout) parts.splice(1, 0, `generating on ${stage.rollout.gpu_count} × ${stage.rollout.gpu}`);
  if (stage.samples_per_prompt && stage.samples_per_prompt.length) parts.push("samples " + stage.samples_per_prompt.join(" → "));
  if (stage.teacher_precision) parts.push(stage.teacher_precision + " teacher");
  if (stage.external_data_share != null) parts.push("mix " + stage.external_data_share);
  if (stage.adapter === "lora") parts.push(`LoRA rank ${stage.lora_rank}`);
  if (stage.staleness_steps) parts.push(`asynchronous, ${stage.staleness_steps} step(s) stale`);
  return parts.join(", ");
}

function planText(plan) {
  const stages = plan.stages ? plan.stages.map(stageText).join(", then ") : stageText(plan);
  return `${stages}, ${plan.checkpoint_interval_minutes}-minute checkpoints`;
}

// The plan table's rows: a one-stage plan's fields by their names (method, gpu, ...); a staged plan's as
// stage1.method, stage2.gpu, ...
function planEntries(plan) {
  if (!plan.stages) return Object.entries(plan);
  const out = [["student", plan.student]];
  const single = plan.stages.length === 1;
  // an object field (a split stage's rollout: {gpu, gpu_count}) gets one row per key
  const push = (k, v) => (v && typeof v === "object" && !Array.isArray(v))
    ? Object.entries(v).forEach(([k2, v2]) => out.push([`${k}.${k2}`, v2])) : out.push([k, v]);
  plan.stages.forEach((stage, n) => Object.entries(stage).forEach(([k, v]) => push(single ? k : `stage${n + 1}.${k}`, v)));
  out.push(["checkpoint_interval_minutes", plan.checkpoint_interval_minutes]);
  return out;
}

// --- tables: drawn from rows, kept for the CSV downloads ---
function fillTable(id, name, header, rows, rowClass) {
  const table = $(id);
  table.replaceChildren();
  const head = table.createTHead().insertRow();
  header.forEach((h) => { const th = document.createElement("th"); th.textContent = h; head.appendChild(th); });
  const body = table.createTBody();
  rows.forEach((row, i) => {
    const tr = body.insertRow();
    if (rowClass) tr.className = rowClass(i) || "";
    row.forEach((cell) => {
      const td = tr.insertCell();
      if (cell && typeof cell === "object") {  // {text, value, key}: raw value kept for downloads and tests
        td.textContent = cell.text;
        if (cell.value !== undefined) { td.dataset.value = cell.value; td.className = "num"; }
        if (cell.key) td.dataset.key = cell.key;
      } else td.textContent = cell;
    });
  });
  state.tables[name] = { header, rows: rows.map((r) => r.map((c) => c && typeof c === "object" ? (c.value ?? c.text) : c)) };
  return table;
}

function showPlan(result, note) {
  const plan = result.plan;
  const planRows = planEntries(plan).filter(([, v]) => v !== null && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => [k, { text: Array.isArray(v) ? v.join(" → ") : String(v), key: k }]);
  fillTable("plan-table", "plan", ["choice", "value"], planRows);
  const m = result.metrics || {};
  fillTable("metrics-table", "metrics", ["metric", "value"],
    METRICS.map(([key, label, fmt]) => [label, { text: fmt(m[key]), value: m[key], key }]));
  $("shown-plan-note").textContent = note || "";
  drawBreakdown("cost-chart", "cost", result.cost_breakdown_usd || {}, "USD", usd);
  drawBreakdown("time-chart", "time", result.hours_breakdown || {}, "hours", hours);
}

function drawBreakdown(id, name, parts, unit, fmt) {
  const keys = Object.keys(parts);
  const values = keys.map((k) => parts[k]);
  Plotly.react(id, [{ type: "bar", x: keys.map((k) => k.replace(/_/g, " ")), y: values,
    text: values.map(fmt), hovertemplate: "%{x}: %{text}<extra></extra>", marker: { color: "#457b9d" } }],
  { margin: { t: 10, r: 10, b: 80, l: 70 }, yaxis: { title: { text: unit } } }, { displaylogo: false, responsive: true });
  state.tables[name] = { header: ["component", unit], rows: keys.map((k, i) => [k, values[i]]) };
}

function showLimits(result) {
  const rows = (result.binding || []).map((b) => {
    const fmt = LIMIT_FORMAT[b.constraint] || points;
    const after = b.objective_after == null ? "-" : (result.objective === "cost" ? usd(b.objective_after) : points(b.objective_after));
    return [b.constraint, { text: fmt(b.limit), value: b.limit }, { text: fmt(b.plan_value), value: b.plan_value },
            b.binding ? "binding" : "slack", b.binding && b.relaxed_to != null ? `${fmt(b.relaxed_to)} → ${after}` : "-"];
  });
  fillTable("binding-table", "binding", ["limit", "limit value", "plan's value", "binds?", "relaxed one step → objective"],
    rows, (i) => (result.binding[i].binding ? "binding" : ""));
  showRisk(result.risk);
}

function showRisk(risk) {
  $("risk-line").textContent = risk && risk.share_meeting_all_limits != null
    ? `Over ${risk.scenarios.toLocaleString("en-US")} scenarios of the uncertainty model, this plan meets every limit in ` +
      `${(100 * risk.share_meeting_all_limits).toFixed(1)} % of them.` : "";
}

function drawFrontier(front) {
  state.frontier = front;
  const pts = front.points;
  Plotly.react("frontier-chart", [{
    type: "scatter", mode: "lines+markers", x: pts.map((p) => p.cost_usd), y: pts.map((p) => p.quality),
    text: pts.map((p, i) => `#${i + 1}: ${planText(p.plan)}<br>${usd(p.cost_usd)} · quality ${points(p.quality)} · ` +
      `${hours(p.wall_hours)} · forgetting ${points(p.forgetting_points)}`),
    hovertemplate: "%{text}<extra></extra>", line: { shape: "hv", color: "#1d3557" }, marker: { size: 10 },
  }], { margin: { t: 10, r: 10, b: 50, l: 60 }, xaxis: { title: { text: "cost (USD)" } },
        yaxis: { title: { text: "quality (points)" } }, hovermode: "closest" }, { displaylogo: false, responsive: true });
  fillTable("frontier-table", "frontier", ["#", "cost", "quality", "wall time", "forgetting", "plan"],
    pts.map((p, i) => [String(i + 1), { text: usd(p.cost_usd), value: p.cost_usd }, { text: points(p.quality), value: p.quality },
      { text: hours(p.wall_hours), value: p.wall_hours }, { text: points(p.forgetting_points), value: p.forgetting_points },
      planText(p.plan)]));
  $("frontier-chart").on("plotly_click", (event) => openFrontierPoint(event.points[0].pointIndex));
  document.querySelectorAll("#frontier-table tbody tr").forEach((tr, i) => { tr.onclick = () => openFrontierPoint(i); });
}

async function openFrontierPoint(i) {
  const point = state.frontier.points[i];
  try {
    const evaluated = await api("POST", "/api/evaluate", { instance: state.instance, plan: point.plan });
    showPlan(evaluated, `Showing frontier point #${i + 1} (click another point to compare; run again for the optimum).`);
    // binding limits and relaxations are the optimum's (found by re-solving); for this point, whether it meets them
    fillTable("binding-table", "binding", ["frontier point", "meets the limits?", "why not"],
      [[`#${i + 1}`, evaluated.feasible ? "yes" : "no", (evaluated.violations || []).join("; ") || "-"]]);
    showRisk(evaluated.risk);
    state.result = evaluated;
    document.querySelectorAll("#frontier-table tbody tr").forEach((tr, k) => tr.classList.toggle("selected", k === i));
  } catch (err) { setStatus(err.message, "error"); }
}

// --- portfolios: procurement table and the schedule as a Gantt chart ---
function showPortfolio(result) {
  fillTable("procurement-table", "procurement", ["provider", "GPU", "tier", "GPUs", "from bucket", "to bucket", "$/GPU-hour", "commitment", "utilisation"],
    result.procurement.map((p) => [p.provider + (p.region ? " " + p.region : ""), p.gpu, p.tier.replace("_", "-"), { text: String(p.gpus), value: p.gpus }, String(p.start_bucket),
      String(p.end_bucket), usd(p.usd_per_gpu_hour), usd(p.commitment_usd),
      p.utilisation == null ? "-" : (100 * p.utilisation).toFixed(0) + " %"]));
  $("portfolio-cost").textContent = `Total ${usd(result.cost_usd)} (${result.status}); buckets of ${result.bucket_hours} h.`;
  const colors = { reserved: "#1d3557", on_demand: "#457b9d", spot: "#e76f51" };
  const traces = {};
  const rows = [];
  result.jobs.forEach((job) => (job.schedule || []).forEach((s) => {
    const tier = s.tier;
    traces[tier] = traces[tier] || { type: "bar", orientation: "h", name: tier.replace("_", "-"), y: [], x: [], base: [], text: [], textposition: "none",
      marker: { color: colors[tier] || "#999" }, hovertemplate: "%{text}<extra></extra>" };
    const start = s.bucket * result.bucket_hours;
    traces[tier].y.push(job.name); traces[tier].base.push(start); traces[tier].x.push(s.hours);
    const seller = s.provider + (s.region ? " " + s.region : "");
    traces[tier].text.push(`${job.name}: ${s.gpus} × ${s.gpu} (${seller}) ${tier.replace("_", "-")}, bucket ${s.bucket}, ${hours(s.hours)}`);
    rows.push([job.name, s.gpu, tier, s.bucket, start, s.hours, s.gpus]);
  }));
  Plotly.react("gantt-chart", Object.values(traces), { barmode: "overlay", margin: { t: 10, r: 10, b: 50, l: 200 },
    xaxis: { title: { text: "hours from the start of the horizon" } }, yaxis: { automargin: true } }, { displaylogo: false, responsive: true });
  state.tables.schedule = { header: ["job", "gpu", "tier", "bucket", "start_hour", "hours", "gpus"], rows };
  fillTable("jobs-table", "jobs", ["job", "plan", "start", "finish", "deadline", "cost", "quality"],
    result.jobs.map((j) => [j.name, planText(j.plan), String(j.start_bucket), String(j.finish_bucket), String(j.deadline_bucket),
      { text: usd(j.metrics.cost_usd), value: j.metrics.cost_usd }, points(j.metrics.quality)]));
}

// --- running: every run is a job of the service (kept in its store, cancellable, re-shown from "Recent jobs") ---
function options() {
  const out = {};
  for (const id of LIMITS) if ($(id).value !== "") out[id] = Number($(id).value);
  if ($("confidence").value !== "") out.confidence = Number($("confidence").value) / 100;
  if ($("objective").value) out.objective = $("objective").value;
  return out;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function runJob(kind, body, label) {
  const submitted = await api("POST", "/api/jobs", { kind, body });
  state.job = submitted.id;
  $("cancel").hidden = false;
  try {
    for (;;) {
      const job = await api("GET", "/api/jobs/" + submitted.id);
      if (job.status === "done") return job.result;
      if (job.status !== "queued" && job.status !== "running") throw new Error(job.error || `${label}: ${job.status}`);
      const progress = job.progress ? ` (${job.progress.done} of ${job.progress.total})` : "";
      setStatus(`${label}: ${job.status}${progress}…`, "busy");
      await sleep(300);
    }
  } finally {
    $("cancel").hidden = true;
    state.job = null;
    loadJobs();
  }
}

function showSolve(result) {
  state.result = result;
  $("job-results").hidden = false;
  if (!result.plan) return `${result.status}: ${result.message || "no plan"}`;
  showPlan(result, "");
  showLimits(result);
  return `${result.status}: ${planText(result.plan)} · ${usd(result.metrics.cost_usd)}`;
}

function showPortfolioResult(result) {
  state.portfolio = result; state.result = result;
  $("portfolio-results").hidden = false;
  showPortfolio(result);
  return `${result.status}: ${usd(result.cost_usd)} for ${result.jobs.length} jobs`;
}

async function run() {
  let instance;
  try { instance = JSON.parse($("instance-text").value); } catch (err) {
    setStatus("instance: not valid JSON (" + err.message + ")", "error"); return;
  }
  state.instance = instance;
  $("job-results").hidden = true; $("portfolio-results").hidden = true;
  setStatus("submitting…", "busy");
  try {
    if (instance.kind === "portfolio") {
      // A portfolio takes the budget (its total spend) and the confidence (a schedule held in that
      // share of capacity scenarios); the other limits are each job's own, in the portfolio file.
      const opts = options();
      const sent = Object.fromEntries(["budget_usd", "confidence"].filter((k) => k in opts).map((k) => [k, opts[k]]));
      const kept = LIMITS.filter((k) => k !== "budget_usd" && k in opts).concat("objective" in opts ? ["objective"] : []);
      const line = showPortfolioResult(await runJob("portfolio", { portfolio: instance, ...sent }, "portfolio"));
      const ignored = kept.length ? ` (not sent: ${kept.join(", ")}; a portfolio's jobs keep their own limits)` : "";
      setStatus(line + ignored, "done");
      return;
    }
    const opts = options();
    const result = await runJob("solve", { instance, ...opts }, "solve");
    const line = showSolve(result);
    if (!result.plan) { setStatus(line, "done"); return; }
    const limits = Object.fromEntries(LIMITS.filter((k) => k in opts).map((k) => [k, opts[k]]));
    drawFrontier(await runJob("frontier", { instance, x: "cost_usd", y: "quality", ...limits }, "frontier"));
    setStatus(line, "done");
  } catch (err) { setStatus(err.message, "error"); }
}

async function cancel() {
  if (!state.job) return;
  try { await api("DELETE", "/api/jobs/" + state.job); } catch (err) { setStatus(err.message, "error"); }
}

// --- recent jobs: the service's store, so a plan can be found and shown again later ---
async function loadJobs() {
  try {
    const jobs = await api("GET", "/api/jobs");
    fillTable("jobs-history", "jobs-history", ["submitted", "kind", "status", "run time", "id"],
      jobs.map((j) => [new Date(j.submitted_at * 1000).toLocaleString(), j.kind, j.status,
        j.run_seconds == null ? "-" : j.run_seconds.toFixed(2) + " s", { text: j.id.slice(0, 8), key: j.id }]));
    document.querySelectorAll("#jobs-history tbody tr").forEach((tr, i) => { tr.onclick = () => showJob(jobs[i].id); });
  } catch (err) { /* no token yet: the status line already says so */ }
}

async function showJob(id) {
  try {
    const [job, request] = await Promise.all([api("GET", "/api/jobs/" + id), api("GET", `/api/jobs/${id}/request`)]);
    if (job.status !== "done") { setStatus(`job ${id.slice(0, 8)}: ${job.status}${job.error ? ": " + job.error : ""}`, "error"); return; }
    state.instance = request.instance;
    $("instance-text").value = JSON.stringify(request.instance, null, 2);
    let line = `job ${id.slice(0, 8)} (${job.kind})`;
    if (job.kind === "portfolio" || request.instance.kind === "portfolio") {
      $("job-results").hidden = true;
      line += ": " + showPortfolioResult(job.result);
    } else if (job.kind === "frontier") {
      $("portfolio-results").hidden = true; $("job-results").hidden = false;
      drawFrontier(job.result);
    } else if (job.kind === "solve") {
      $("portfolio-results").hidden = true;
      line += ": " + showSolve(job.result);
    } else {
      state.result = job.result;
      line += ": done (download its JSON)";
    }
    setStatus(line, "done");
  } catch (err) { setStatus(err.message, "error"); }
}

// --- downloads: JSON of the result, CSV of every table, PNG and SVG of every chart ---
function save(name, text, type) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], { type }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
}
const csvCell = (v) => (v == null ? "" : /[",\n]/.test(String(v)) ? `"${String(v).replace(/"/g, '""')}"` : String(v));
function csv(name) {
  const t = state.tables[name];
  return [t.header, ...t.rows].map((r) => r.map(csvCell).join(",")).join("\n") + "\n";
}
function addDownloads() {
  document.querySelectorAll(".downloads").forEach((span) => {
    const button = (label, action) => { const b = document.createElement("button"); b.type = "button"; b.textContent = label; b.onclick = action; span.appendChild(b); };
    if (span.dataset.chart) {
      for (const format of ["png", "svg"]) button(format.toUpperCase(), () => Plotly.downloadImage(span.dataset.chart, { format, filename: span.dataset.chart, width: 1000, height: 500 }));
    }
    if (span.dataset.table) button("CSV", () => save(span.dataset.table + ".csv", csv(span.dataset.table), "text/csv"));
  });
  const json = () => save("planopt-result.json", JSON.stringify(state.result, null, 2), "application/json");
  $("download-json").onclick = json;
  $("download-portfolio-json").onclick = json;
}

// --- the instance: shipped, uploaded or pasted ---
async function loadShipped() {
  try {
    const names = await api("GET", "/api/instances");
    const select = $("shipped");
    select.replaceChildren(new Option("(choose)", ""));
    names.forEach((n) => select.appendChild(new Option(`${n.name} (${n.kind})`, n.name)));
    setStatus("", "");
  } catch (err) { setStatus("enter the API token (" + err.message + ")", "error"); }
}

async function pickShipped() {
  if (!$("shipped").value) return;
  try { $("instance-text").value = JSON.stringify(await api("GET", "/api/instances/" + encodeURIComponent($("shipped").value)), null, 2); }
  catch (err) { setStatus(err.message, "error"); }
}

function upload() {
  const file = $("upload").files[0];
  if (file) file.text().then((text) => { $("instance-text").value = text; });
}

document.addEventListener("DOMContentLoaded", () => {
  readToken();
  addDownloads();
  $("token").addEventListener("change", () => { sessionStorage.setItem("planopt-token", $("token").value.trim()); loadShipped(); loadJobs(); });
  $("shipped").addEventListener("change", pickShipped);
  $("upload").addEventListener("change", upload);
  $("run").addEventListener("click", run);
  $("cancel").addEventListener("click", cancel);
  $("refresh-jobs").addEventListener("click", loadJobs);
  loadShipped();
  loadJobs();
});
