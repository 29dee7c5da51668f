// planopt's page: pick or paste an instance, set the limits, run, see the plan, its breakdowns,
// its binding limits and the cost-quality frontier (or a portfolio's procurement and schedule).
// Every number shown comes from the API's JSON (the CLI's); the page computes none of its own.
"use strict";

const $ = (id) => document.getElementById(id);
const LIMITS = ["budget_usd", "deadline_hours", "max_forgetting_points", "min_quality"];
// frontierLimits: the limits the page sent with the run that drew the frontier (the rest are the instance's own)
const state = { instance: null, frontierLimits: {}, result: null, frontier: null, portfolio: null, tables: {} };

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
const LIMIT_LABEL = { budget_usd: "budget", deadline_hours: "deadline", max_forgetting_points: "forgetting tolerance",
                      min_quality: "minimum quality" };
const LIMIT_UNIT = { budget_usd: "USD", deadline_hours: "hours", max_forgetting_points: "points", min_quality: "points" };
const LIMIT_METRIC = { budget_usd: "cost_usd", deadline_hours: "wall_hours", max_forgetting_points: "forgetting_points",
                       min_quality: "quality" };
const share = (v) => v == null ? "-" : (100 * v).toFixed(1) + " %";
const count = (v) => v.toLocaleString("en-US");
// the plan JSON's keys as the plan table names them (the key itself stays in the cell's data-key)
const PLAN_LABELS = {
  student: "student", method: "method", steps: "training length (steps)", samples_per_prompt: "samples per prompt, per phase",
  teacher_precision: "teacher precision", teacher_precision_by_phase: "teacher precision, per phase",
  external_data_share: "SFT data mix (share of new-domain data)",
  max_epochs: "SFT epochs (at most)", adapter: "adapter", lora_rank: "LoRA rank", cpu_offload: "CPU offload",
  gpu: "GPU", gpu_count: "GPUs", "rollout.gpu": "rollout GPU", "rollout.gpu_count": "rollout GPUs",
  staleness_steps: "generation behind training (steps)", checkpoint_interval_minutes: "checkpoint interval (minutes)",
  retention: "retention", trainer: "trainer", environment_pool: "environment pool (workers the environments run on)",
  pretraining_tokens: "continued pre-training (tokens, before the stage)",
};
function planLabel(key) {
  const staged = key.match(/^stage(\d+)\.(.*)$/);
  const [prefix, k] = staged ? [`stage ${staged[1]}: `, staged[2]] : ["", key];
  return prefix + (PLAN_LABELS[k] || k.replace(/[._]/g, " "));
}
const planValue = (v) => Array.isArray(v) ? v.join(" → ") : typeof v === "boolean" ? (v ? "yes" : "no")
  : v && typeof v === "object" ? JSON.stringify(v) : String(v);

// A plan is {student, stages: [...], checkpoint_interval_minutes} (a single job's) or one stage's
// fields with its interval (a portfolio job's).
function stageText(stage) {
  const parts = [`${stage.method.toUpperCase()} on ${stage.gpu_count} × ${stage.gpu}`, `${stage.steps.toLocaleString("en-US")} steps`];
  if (stage.pretraining_tokens) parts.unshift(`continued pre-training on ${(stage.pretraining_tokens / 1e9).toLocaleString("en-US")} B tokens`);
  if (stage.rollout) parts.splice(1, 0, `generating on ${stage.rollout.gpu_count} × ${stage.rollout.gpu}`);
  if (stage.samples_per_prompt && stage.samples_per_prompt.length) parts.push("samples " + stage.samples_per_prompt.join(" → "));
  // a teacher precision per phase (teacher_precision_by_phase) as its schedule, int8 → int8 → fp8
  if (stage.teacher_precision) parts.push((stage.teacher_precision_by_phase || [stage.teacher_precision]).join(" → ") + " teacher");
  if (stage.external_data_share != null) parts.push("mix " + stage.external_data_share);
  if (stage.adapter === "lora") parts.push(`LoRA rank ${stage.lora_rank}`);
  if (stage.staleness_steps) parts.push(`asynchronous, ${stage.staleness_steps} step(s) stale`);
  if (stage.environment_pool) parts.push(`environments on pool ${stage.environment_pool}`);
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
      if (cell && typeof cell === "object" && cell.button) {  // {button, onclick, key}: an action
        const b = document.createElement("button");
        b.type = "button"; b.textContent = cell.button; b.onclick = cell.onclick;
        if (cell.key) b.dataset.key = cell.key;
        td.appendChild(b);
      } else if (cell && typeof cell === "object") {  // {text, value, key}: raw value kept for downloads and tests
        td.textContent = cell.text;
        if (cell.value !== undefined) { td.dataset.value = cell.value; td.className = "num"; }
        if (cell.key) td.dataset.key = cell.key;
      } else td.textContent = cell;
    });
  });
  const raw = (c) => c && typeof c === "object" ? (c.button ? "" : (c.value ?? c.text)) : c;
  state.tables[name] = { header, rows: rows.map((r) => r.map(raw)) };
  return table;
}

// Where each GPU set of the plan is bought (the JSON's `offers`): provider and region, tier, $/GPU-hour.
function offerRows(offers, staged) {
  return (offers || []).flatMap((o, n) => {
    const where = staged || offers.length > 1 ? `stage ${o.stage} ${o.role} GPUs: ` : "";
    const seller = o.provider != null ? o.provider + (o.region ? " " + o.region : "")
      : o.source === "the instance's price" ? "(the instance's own price)" : "(gpus.json reference price)";
    const detail = [`${o.count} × ${o.gpu}`, o.interconnect, o.as_of ? "as of " + o.as_of : null].filter(Boolean).join(", ");
    return [[where + "provider", { text: seller, key: `offers.${n}.provider` }],
            [where + "tier", { text: o.tier.replace("_", "-"), key: `offers.${n}.tier` }],
            [where + "$/GPU-hour", { text: `${usd(o.usd_per_gpu_hour)} (${detail})`, value: o.usd_per_gpu_hour, key: `offers.${n}.usd_per_gpu_hour` }]];
  });
}

// The pool each stage's environments run on (the JSON's `environments`): its workers, what it and the traffic cost.
function environmentRows(environments) {
  return (environments || []).flatMap((e, n) => {
    const where = environments.length > 1 || e.stage > 1 ? `stage ${e.stage} ` : "";
    const kind = e.kind === "gpu_host" ? "on the GPU nodes' CPUs" : "CPU sandboxes";
    return [[where + "environment workers", { text: `${count(e.workers)} ${kind} (${e.overlap === "agent_loop" ? "overlapping generation" : "after generation"})`, value: e.workers, key: `environments.${n}.workers` }],
            [where + "environment pool money", { text: `${usd(e.pool_usd)} held, ${usd(e.traffic_usd)} traffic`, value: e.pool_usd + e.traffic_usd + e.sandbox_usd, key: `environments.${n}.usd` }]];
  });
}

// The results: point values, or under a confidence the means over its scenarios (what the objective measures)
// with the CVaR where that is the objective.
function metricRows(result) {
  const m = result.metrics || {};
  const risk = result.risk || {};
  const expected = risk.objective_measure && risk.expected ? risk.expected : {};
  const rows = METRICS.map(([key, label, fmt]) => key in expected
    ? [`expected ${label}`, { text: fmt(expected[key]), value: expected[key], key: "expected." + key }]
    : [label, { text: fmt(m[key]), value: m[key], key }]);
  if (risk.objective_measure && risk.objective_measure.startsWith("cvar_")) {
    rows.unshift([`CVaR at ${risk.objective_measure.slice(5)} of cost`, { text: usd(risk.cvar_cost_usd), value: risk.cvar_cost_usd, key: "cvar_cost_usd" }]);
  }
  $("metrics-note").textContent = risk.objective_measure && risk.expected
    ? `Means over the ${count(risk.scenarios)} scenarios the plan was chosen on; the point estimate of cost is ${usd(m.cost_usd)}.` : "";
  return rows;
}

// The planned spend's budget and alert lines (the JSON's `spend`): the day the cumulative spend crosses each.
function spendText(spend) {
  if (!spend || !spend.lines) return "";
  const reached = (line) => line.reached ? `reached on day ${line.reached.day} (hour ${points(line.reached.hour)} from the start)` : "never reached";
  const parts = [];
  if (spend.lines.alert) parts.push(`alert line ${usd(spend.lines.alert.usd)} (${(100 * spend.alert_share).toFixed(0)} % of the budget): ${reached(spend.lines.alert)}`);
  if (spend.lines.budget) parts.push(`budget ${usd(spend.lines.budget.usd)}: ${reached(spend.lines.budget)}`);
  return parts.length ? `Planned spend: ${parts.join("; ")}; the plan's total is ${usd(spend.total_usd)}.`
    : `No budget, so no alert line; the plan's total is ${usd(spend.total_usd)}.`;
}

function showPlan(result, note) {
  const plan = result.plan;
  const planRows = planEntries(plan).filter(([, v]) => v !== null && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => [planLabel(k), { text: planValue(v), key: k }]);
  fillTable("plan-table", "plan", ["choice", "value"], planRows.concat(offerRows(result.offers, plan.stages && plan.stages.length > 1),
                                                                     environmentRows(result.environments)));
  fillTable("metrics-table", "metrics", ["metric", "value"], metricRows(result));
  $("spend-line").textContent = spendText(result.spend);
  $("shown-plan-note").textContent = note || "";
  drawBreakdown("cost-chart", "cost", result.cost_breakdown_usd || {}, "USD", usd);
  drawBreakdown("time-chart", "time", result.hours_breakdown || {}, "hours", hours);
  showQuantities(result);
}

// the plan's key quantities and its fixed vs elastic cost (models/cost/quantities.py)
function showQuantities(result) {
  const q = result.quantities || {};
  fillTable("quantities-table", "quantities", ["quantity", "value"],
    Object.keys(q).filter((k) => q[k]).map((k) => [k.replace(/_/g, " "),
      { text: q[k].toLocaleString("en-US", { maximumFractionDigits: 1 }), value: q[k], key: k }]));
  const split = result.cost_split_usd;
  $("cost-split").textContent = split ? `Fixed ${usd(split.fixed)} (does not scale with the plan's length or hours), ` +
    `elastic ${usd(split.elastic)}.` : "";
}

function drawBreakdown(id, name, parts, unit, fmt) {
  const keys = Object.keys(parts);
  const values = keys.map((k) => parts[k]);
  Plotly.react(id, [{ type: "bar", x: keys.map((k) => k.replace(/_/g, " ")), y: values,
    text: values.map(fmt), hovertemplate: "%{x}: %{text}<extra></extra>", marker: { color: "#457b9d" } }],
  { margin: { t: 10, r: 10, b: 80, l: 70 }, yaxis: { title: { text: unit } } }, { displaylogo: false, responsive: true });
  state.tables[name] = { header: ["component", unit], rows: keys.map((k, i) => [k, values[i]]) };
}

// The run's limits: the page's fields sent with it, else the instance's own constraints.
function limitValues(instance, limits) {
  const own = (instance && instance.constraints) || {};
  return Object.fromEntries(LIMITS.map((k) => [k, limits[k] ?? own[k] ?? null]));
}

function showLimits(result, limits) {
  if (!result.binding && result.risk && result.risk.in_sample_share != null) { showChanceLimits(result, limits); return; }
  const rows = (result.binding || []).map((b) => {
    const fmt = LIMIT_FORMAT[b.constraint] || points;
    const after = b.objective_after == null ? "-" : (result.objective === "cost" ? usd(b.objective_after) : points(b.objective_after));
    return [{ text: LIMIT_LABEL[b.constraint] || b.constraint, key: b.constraint }, { text: fmt(b.limit), value: b.limit },
            { text: fmt(b.plan_value), value: b.plan_value },
            b.binding ? "binding" : "slack", b.binding && b.relaxed_to != null ? `${fmt(b.relaxed_to)} → ${after}` : "-"];
  });
  fillTable("binding-table", "binding", ["limit", "limit value", "plan's value", "binds?", "relaxed one step → objective"],
    rows, (i) => (result.binding[i].binding ? "binding" : ""));
  showRisk(result.risk);
}

// A plan held at a confidence: each limit of the run with the plan's point value, its mean over the sample and
// the share of fresh scenarios that meet it (the solve reports no binding limits: the chance constraint binds).
function showChanceLimits(result, limits) {
  const risk = result.risk;
  const fresh = risk.out_of_sample_limits || {};
  const values = limitValues(state.instance, limits);
  const names = LIMITS.filter((k) => values[k] != null || k in fresh);
  fillTable("binding-table", "binding", ["limit", "limit value", "plan's value (point)",
    `expected (${count(risk.scenarios)} scenarios)`, `met in (${count(risk.out_of_sample_scenarios)} fresh scenarios)`],
  names.map((k) => {
    const fmt = LIMIT_FORMAT[k], metric = LIMIT_METRIC[k];
    return [{ text: LIMIT_LABEL[k], key: k }, { text: fmt(values[k]), value: values[k] ?? undefined, key: "limit." + k },
      { text: fmt(result.metrics[metric]), value: result.metrics[metric] },
      { text: fmt(risk.expected[metric]), value: risk.expected[metric], key: "expected." + k },
      { text: share(fresh[k]), value: fresh[k] ?? undefined, key: "share." + k }];
  }));
  showRisk(risk);
}

function showRisk(risk) {
  const line = $("risk-line");
  line.replaceChildren();
  if (risk && risk.in_sample_share != null) {
    const span = (key, text) => { const s = document.createElement("span"); s.dataset.key = key; s.textContent = text; return s; };
    line.append(`Held at ${share(risk.confidence)} of ${count(risk.scenarios)} scenarios: every limit met in `,
      span("in_sample_share", share(risk.in_sample_share)), ` of them (in sample); on ${count(risk.out_of_sample_scenarios)} fresh scenarios, in `,
      span("out_of_sample_share", share(risk.out_of_sample_share)), " (out of sample).");
    if (risk.guard_rounds) line.append(` The share asked did not hold out of sample, so the sample share was raised to ${share(risk.in_sample_target)}.`);
    if (risk.guard) line.append(" Warning: " + risk.guard + ".");
  } else if (risk && risk.share_meeting_all_limits != null) {
    line.textContent = `Over ${count(risk.scenarios)} scenarios of the uncertainty model, this plan meets every limit in ` +
      `${share(risk.share_meeting_all_limits)} of them.`;
  }
}

function drawFrontier(front, limits) {
  state.frontier = front;
  state.frontierLimits = limits || {};
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

// The instance with the run's limits in its constraints: what the frontier was drawn under.
function withLimits(instance, limits) {
  const given = Object.fromEntries(LIMITS.filter((k) => limits[k] != null).map((k) => [k, limits[k]]));
  return Object.keys(given).length ? { ...instance, constraints: { ...(instance.constraints || {}), ...given } } : instance;
}

async function openFrontierPoint(i) {
  const point = state.frontier.points[i];
  const limits = state.frontierLimits || {};
  try {
    // judged against the limits of the run that drew the frontier, not only the instance file's
    const evaluated = await api("POST", "/api/evaluate", { instance: withLimits(state.instance, limits), plan: point.plan });
    showPlan(evaluated, `Showing frontier point #${i + 1} (click another point to compare; run again for the optimum).`);
    // binding limits and relaxations are the optimum's (found by re-solving); for this point, whether it meets them
    const values = limitValues(state.instance, limits);
    const against = LIMITS.filter((k) => values[k] != null).map((k) => `${LIMIT_LABEL[k]} ${LIMIT_FORMAT[k](values[k])}`).join(", ");
    fillTable("binding-table", "binding", ["frontier point", "meets the limits?", "why not", "the run's limits"],
      [[`#${i + 1}`, { text: evaluated.feasible ? "yes" : "no", key: "feasible" }, (evaluated.violations || []).join("; ") || "-",
        { text: against || "-", key: "limits" }]]);
    showRisk(evaluated.risk);
    state.result = evaluated;
    document.querySelectorAll("#frontier-table tbody tr").forEach((tr, k) => tr.classList.toggle("selected", k === i));
  } catch (err) { setStatus(err.message, "error"); }
}

// --- portfolios: procurement table and the schedule as a Gantt chart ---
// Rows of one offer (provider, region, GPU, tier, term, price) and GPU count in consecutive buckets are one row
// over the bucket range; commitments add up, utilisation is weighted by the committed hours.
const SAME_PURCHASE = ["provider", "region", "gpu", "tier", "term", "gpus", "usd_per_gpu_hour"];
function mergedProcurement(rows) {
  const out = [];
  rows.slice().sort((a, b) => a.start_bucket - b.start_bucket).forEach((p) => {
    const m = out.find((q) => q.end_bucket + 1 === p.start_bucket && SAME_PURCHASE.every((k) => q[k] === p[k]));
    if (!m) { out.push({ ...p }); return; }
    const used = (r) => r.utilisation == null || r.committed_hours == null ? null : r.utilisation * r.committed_hours;
    const both = used(m) != null && used(p) != null;
    m.utilisation = both ? (used(m) + used(p)) / (m.committed_hours + p.committed_hours) : null;
    m.committed_hours = m.committed_hours == null || p.committed_hours == null ? null : m.committed_hours + p.committed_hours;
    m.commitment_usd = m.commitment_usd == null || p.commitment_usd == null ? null : m.commitment_usd + p.commitment_usd;
    m.end_bucket = p.end_bucket;
  });
  return out;
}

// A Gantt row: the job's name, and for a job holding several gangs (stages, rollout GPUs, a teacher trained first:
// result version 1.4) which gang the bar is, so that a staged job's stages read as rows of their own.
function gangLabel(job, s) {
  if (!job.gangs || job.gangs.length < 2) return job.name;
  const who = s.stage == null ? "teacher" : `stage ${s.stage}`;
  const role = s.role === "training" || s.role === "teacher" ? "" : ` ${s.role.replace("teacher_", "")}`;
  return `${job.name} · ${who}${role}`;
}

function showPortfolio(result) {
  fillTable("procurement-table", "procurement", ["provider", "GPU", "tier", "GPUs", "from bucket", "to bucket", "$/GPU-hour", "commitment", "utilisation"],
    mergedProcurement(result.procurement).map((p) => [p.provider + (p.region ? " " + p.region : ""), p.gpu, p.tier.replace("_", "-"),
      { text: String(p.gpus), value: p.gpus }, { text: String(p.start_bucket), key: "start_bucket" }, { text: String(p.end_bucket), key: "end_bucket" },
      usd(p.usd_per_gpu_hour), usd(p.commitment_usd), p.utilisation == null ? "-" : (100 * p.utilisation).toFixed(0) + " %"]));
  $("portfolio-cost").textContent = `Total ${usd(result.cost_usd)} (${result.status}); buckets of ${result.bucket_hours} h.`;
  const colors = { reserved: "#1d3557", on_demand: "#457b9d", spot: "#e76f51" };
  const traces = {};
  const rows = [];
  result.jobs.forEach((job) => (job.schedule || []).forEach((s) => {
    const tier = s.tier;
    traces[tier] = traces[tier] || { type: "bar", orientation: "h", name: tier.replace("_", "-"), y: [], x: [], base: [], text: [], textposition: "none",
      marker: { color: colors[tier] || "#999" }, hovertemplate: "%{text}<extra></extra>" };
    const start = s.bucket * result.bucket_hours;
    const row = gangLabel(job, s);
    traces[tier].y.push(row); traces[tier].base.push(start); traces[tier].x.push(s.hours);
    const seller = s.provider + (s.region ? " " + s.region : "");
    traces[tier].text.push(`${row}: ${s.gpus} × ${s.gpu} (${seller}) ${tier.replace("_", "-")}, bucket ${s.bucket}, ${hours(s.hours)}`);
    rows.push([job.name, s.stage == null ? "" : s.stage, s.role || "", s.gpu, tier, s.bucket, start, s.hours, s.gpus]);
  }));
  Plotly.react("gantt-chart", Object.values(traces), { barmode: "overlay", margin: { t: 10, r: 10, b: 50, l: 200 },
    xaxis: { title: { text: "hours from the start of the horizon" } }, yaxis: { automargin: true } }, { displaylogo: false, responsive: true });
  state.tables.schedule = { header: ["job", "stage", "role", "gpu", "tier", "bucket", "start_hour", "hours", "gpus"], rows };
  fillTable("jobs-table", "jobs", ["job", "plan", "start", "finish", "deadline", "cost", "quality"],
    result.jobs.map((j) => [j.name, planText(j.plan), String(j.start_bucket), String(j.finish_bucket), String(j.deadline_bucket),
      { text: usd(j.metrics.cost_usd), value: j.metrics.cost_usd }, points(j.metrics.quality)]));
}

// --- running: every run is a job of the service (kept in its store, cancellable, re-shown from "Recent jobs") ---
class FieldError extends Error {
  constructor(field, message) { super(message); this.field = field; }
}

// The confidence field holds a percentage of scenarios, strictly between 0 and 100 as the share the API takes
// lies strictly between 0 and 1. A value of 1 or less is read as a share typed by mistake and refused, naming
// the percentage meant: no one asks for a plan that meets its limits in 0.9 % of scenarios.
function confidenceShare(text) {
  const v = Number(text);
  if (!Number.isFinite(v) || v <= 0 || v >= 100) {
    throw new FieldError("confidence", `Confidence: expected a percentage of scenarios strictly between 0 and 100 (e.g. 90), got ${text}`);
  }
  if (v < 1) {
    const meant = Number((100 * v).toPrecision(12));
    throw new FieldError("confidence", `Confidence: ${text} % of scenarios looks like a share; did you mean ${meant} %? (type the percentage, e.g. ${meant})`);
  }
  if (v === 1) {
    throw new FieldError("confidence", "Confidence: 1 % of scenarios looks like a share (100 %), which no chance constraint can hold; type a percentage below 100, e.g. 90");
  }
  return v / 100;
}

function options() {
  const out = {};
  for (const id of LIMITS.concat("confidence")) {
    if ($(id).validity.badInput) throw new FieldError(id, `${id === "confidence" ? "Confidence" : LIMIT_LABEL[id]}: expected a number`);
  }
  for (const id of LIMITS) if ($(id).value !== "") out[id] = Number($(id).value);
  if ($("confidence").value !== "") out.confidence = confidenceShare($("confidence").value);
  if ($("objective").value) out.objective = $("objective").value;
  return out;
}

function refuseField(err) {
  setStatus(err.message, "error");
  if (err.field) { $(err.field).setAttribute("aria-invalid", "true"); $(err.field).focus(); }
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

// No plan: the message and the relaxations the solve found (each limit alone, or several together), each
// applied by one click: its value goes into the limit's field and the instance is run again.
function showInfeasible(result, limits) {
  $("infeasible").hidden = false;
  $("infeasible-message").textContent = `${result.status}: ${result.message || "no plan"}`;
  const rows = result.relaxations || [];
  const together = rows.filter((r) => r.together);
  const now = limitValues(state.instance, limits || {});
  fillTable("relaxations-table", "relaxations", ["limit", "now", "relax to", "", ""], rows.map((r, i) => {
    // no hardware holds any recipe: a change of the instance's options (job/hardware_fit.py), not a limit to apply
    if (r.kind === "hardware") return [{ text: r.constraint, key: r.constraint }, "-", { text: r.change, key: "required." + r.constraint }, r.text, "-"];
    const group = r.together ? together : [r];
    const field = LIMITS.includes(r.constraint);
    const fmt = LIMIT_FORMAT[r.constraint];
    return [{ text: LIMIT_LABEL[r.constraint] || r.constraint, key: r.constraint }, fmt && now[r.constraint] != null ? fmt(now[r.constraint]) : "-",
      { text: `${r.required} ${LIMIT_UNIT[r.constraint] || ""}`.trim(), value: r.required, key: "required." + r.constraint },
      r.together ? "together with the other rows so marked" : "alone",
      field ? { button: r.together ? "Apply these" : "Apply", key: "apply." + i, onclick: () => applyRelaxation(group) } : "-"];
  }));
}

function applyRelaxation(rows) {
  rows.filter((r) => LIMITS.includes(r.constraint)).forEach((r) => { $(r.constraint).value = String(r.required); });
  run();
}

function showSolve(result, limits) {
  state.result = result;
  if (!result.plan) {
    $("job-results").hidden = true;
    showInfeasible(result, limits);
    return `${result.status}: ${result.message || "no plan"}`;
  }
  $("job-results").hidden = false;
  showPlan(result, "");
  showLimits(result, limits);
  const expected = result.risk && result.risk.objective_measure && result.risk.expected;
  const cost = expected ? `expected ${usd(expected.cost_usd)}` : usd(result.metrics.cost_usd);
  return `${result.status}: ${planText(result.plan)} · ${cost}`;
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
  let opts;
  try { opts = options(); } catch (err) { refuseField(err); return; }
  state.instance = instance;
  $("job-results").hidden = true; $("portfolio-results").hidden = true; $("infeasible").hidden = true;
  setStatus("submitting…", "busy");
  try {
    if (instance.kind === "portfolio") {
      // A portfolio takes the budget (its total spend) and the confidence (a schedule held in that
      // share of capacity scenarios); the other limits are each job's own, in the portfolio file.
      const sent = Object.fromEntries(["budget_usd", "confidence"].filter((k) => k in opts).map((k) => [k, opts[k]]));
      const kept = LIMITS.filter((k) => k !== "budget_usd" && k in opts).concat("objective" in opts ? ["objective"] : []);
      const line = showPortfolioResult(await runJob("portfolio", { portfolio: instance, ...sent }, "portfolio"));
      const ignored = kept.length ? ` (not sent: ${kept.join(", ")}; a portfolio's jobs keep their own limits)` : "";
      setStatus(line + ignored, "done");
      return;
    }
    const limits = Object.fromEntries(LIMITS.filter((k) => k in opts).map((k) => [k, opts[k]]));
    const result = await runJob("solve", { instance, ...opts }, "solve");
    const line = showSolve(result, limits);
    if (!result.plan) { setStatus(line, "done"); return; }
    drawFrontier(await runJob("frontier", { instance, x: "cost_usd", y: "quality", ...limits }, "frontier"), limits);
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
    fillTable("jobs-history", "jobs-history", ["submitted", "instance", "kind", "status", "run time", "id"],
      jobs.map((j) => [new Date(j.submitted_at * 1000).toLocaleString(), { text: j.name || "(unnamed)", key: "name" }, j.kind, j.status,
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
    const given = request.options || {};
    const limits = Object.fromEntries(LIMITS.filter((k) => given[k] != null).map((k) => [k, given[k]]));
    let line = `job ${job.name || id.slice(0, 8)} (${job.kind})`;
    $("infeasible").hidden = true;
    if (job.kind === "portfolio" || request.instance.kind === "portfolio") {
      $("job-results").hidden = true;
      line += ": " + showPortfolioResult(job.result);
    } else if (job.kind === "frontier") {
      $("portfolio-results").hidden = true; $("job-results").hidden = false;
      drawFrontier(job.result, limits);
    } else if (job.kind === "solve") {
      $("portfolio-results").hidden = true;
      line += ": " + showSolve(job.result, limits);
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
// A .downloads span's buttons: PNG and SVG of its data-chart, CSV of its data-table (also for spans drawn later).
function addDownloadButtons(span) {
  const button = (label, action) => { const b = document.createElement("button"); b.type = "button"; b.textContent = label; b.onclick = action; span.appendChild(b); };
  if (span.dataset.chart) {
    for (const format of ["png", "svg"]) button(format.toUpperCase(), () => Plotly.downloadImage(span.dataset.chart, { format, filename: span.dataset.chart, width: 1000, height: 500 }));
  }
  if (span.dataset.table) button("CSV", () => save(span.dataset.table + ".csv", csv(span.dataset.table), "text/csv"));
}
function addDownloads() {
  document.querySelectorAll(".downloads").forEach(addDownloadButtons);
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
  LIMITS.concat("confidence").forEach((id) => $(id).addEventListener("input", () => $(id).removeAttribute("aria-invalid")));
  loadShipped();
  loadJobs();
});
