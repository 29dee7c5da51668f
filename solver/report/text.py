"""Readable text for people: plans, limits and breakdowns as tables (drawn by rich, ``tables.py``)."""

from __future__ import annotations

from typing import Any, Sequence

from planopt.models.cost.evaluator import Metrics
from planopt.models.schema.plan import Plan
from planopt.models.schema.instance import Instance

from planopt.report.labels import printable

METHOD_NAMES = {"sft": "SFT (supervised fine-tuning)", "rl": "RL (reinforcement learning)",
                "opd": "OPD (on-policy distillation)"}
OBJECTIVE_NAMES = {"cost": "least cost", "quality": "most quality", "time": "least time", "forgetting": "least forgetting"}


def table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, indent: str = "  ") -> str:
    """``rows`` under ``header`` as a rich table: plain ASCII-ruled text off a terminal (``tables.render_table``)."""
    from planopt.report.tables import render_table
    return render_table(rows, header, indent)


def usd(x: float) -> str:
    """Dollars for people: whole above $100, cents below."""
    return f"${x:,.0f}" if abs(x) >= 100 else f"${x:,.2f}"


def hours(x: float) -> str:
    """Hours for people: ``h`` from one hour, minutes below."""
    return f"{x:,.1f} h" if abs(x) >= 1 else f"{x * 60:,.1f} min"   # negative: asynchronous RL's overlap


def plan_rows(plan: Plan, inst: Instance | None = None) -> list[tuple[str, str]]:
    """The plan's decisions as rows: a one-stage plan's stage rows, or its sequence and each stage's rows under
    "stage N"; then the interval and retention they share. With ``inst``, a trained teacher's rows carry its
    cost and hours."""
    if len(plan.stages) == 1:
        rows = stage_rows(plan.stage, inst)
    else:
        rows = [("stages", " → ".join(m.upper() for m in plan.methods))]
        for n, stage in enumerate(plan.stages, 1):
            rows += [(f"stage {n}: {label}" if k == 0 else f"         {label}", value)
                     for k, (label, value) in enumerate(stage_rows(stage, inst))]
    rows.append(("checkpoint interval", f"{plan.checkpoint_interval_minutes:g} min"))
    return rows + retention_rows(plan.retention)


def stage_rows(stage, inst: Instance | None = None) -> list[tuple[str, str]]:
    """One stage's decisions as rows."""
    r, h = stage.recipe, stage.hardware
    rows = [("method", METHOD_NAMES[r.method]), ("GPUs", f"{h.count} × {h.gpu}"), ("training length", f"{r.steps:,} steps")]
    if r.pretraining_tokens:  # continued pre-training first (models/cost/pretraining.py)
        rows.insert(1, ("continued pre-training", f"{r.pretraining_tokens / 1e9:,.3g} B tokens of domain text first "
                                                  "(every weight, on the stage's GPUs)"))
    if h.rollout_gpu is not None:
        rows.insert(2 + bool(r.pretraining_tokens), ("rollout GPUs", f"{h.rollout_count} × {h.rollout_gpu} (separate: generation runs there, "
                                        "weights cross the network each step)"))
    if r.samples_per_prompt:
        rows.append(("samples per prompt", " → ".join(map(str, r.samples_per_prompt)) + f"  ({len(r.samples_per_prompt)} phases)"))
    if r.teacher_precision:
        rows.append(("teacher precision", r.teacher_precision_text.replace("→", " → ")
                     + ("  (one per phase)" if r.teacher_precision_by_phase else "")))
    rows += teacher_training_rows(r, inst)
    if r.external_data_share is not None:
        rows.append(("SFT data mix", f"{r.external_data_share:.0%} new-domain, {1 - r.external_data_share:.0%} general"))
    if r.method == "sft" and r.max_epochs is not None:
        rows.append(("SFT epochs", f"at most {r.max_epochs} per distinct example (owned ones reused before any is bought)"))
    if r.adapter == "lora":
        rows.append(("adapter", f"LoRA rank {r.lora_rank} on every linear layer (frozen base weights)"))
    if h.trainer is not None:
        from planopt.models.cost.trainer import describe
        rows.append(("trainer", describe(h.trainer)))
    if h.context_parallel != 1:
        rows.append(("context parallel", f"each sequence split over {h.context_parallel} GPUs (KV passed around a ring)"))
    if h.cpu_offload:
        rows.append(("CPU offload", "parameters, gradients and optimiser state in host memory (priced over the host link)"))
    if r.staleness_steps:
        rows.append(("asynchronous", f"generation up to {r.staleness_steps} step{'s' if r.staleness_steps > 1 else ''} "
                                     "behind the trained policy, overlapping training"))
    if h.environment_pool is not None:
        rows.append(("environments", environment_pool_text(h, inst)))
    return rows


def environment_pool_text(h, inst: Instance | None) -> str:
    """The pool of environment workers a stage's environments run on (``cost/environments.py``): its workers and
    price with ``inst``, else its name."""
    if inst is None:
        return h.environment_pool
    from planopt.models.cost.environments import describe
    from planopt.models.cost.hardware import HardwareProfile
    hp = HardwareProfile(inst, h)
    overlap = ("; they run while the engine generates (agent loop)" if inst.environments.overlap == "agent_loop"
               else "; they run after generation")
    return describe(hp.environment_pool, hp.nodes) + overlap


def teacher_training_rows(recipe, inst: Instance | None = None) -> list[tuple[str, str]]:
    """A teacher trained as a stage (``teacher_training.py``) of an OPD recipe: its own plan as rows, the first one
    "SFT 400 steps on 8 × H100, $X, Y h" (cost and hours with ``inst``); none otherwise."""
    t = recipe.teacher_training
    if t is None:
        return []
    head = f"{t.method.upper()} {t.steps:,} steps on {t.gpu_count} × {t.gpu}"
    if inst is not None:
        from planopt.models.cost.teacher_training import teacher_option
        from planopt.models.cost.evaluator import Evaluator
        option = teacher_option(inst, t, recipe.method, Evaluator)
        head += (f", {usd(option.cost_usd)}, {hours(option.wall_hours)} (reaches {option.quality:.2f}; "
                 f"teacher.score {inst.teacher.score:g}; in the data cost and the lead time)")
    rows = [("teacher training", head)]
    if t.rollout_gpu is not None:
        rows.append(("  teacher rollout GPUs", f"{t.rollout_gpu_count} × {t.rollout_gpu}"))
    if t.samples_per_prompt:
        rows.append(("  teacher samples per prompt", " → ".join(map(str, t.samples_per_prompt))))
    if t.external_data_share is not None:
        rows.append(("  teacher SFT data mix", f"{t.external_data_share:.0%} new-domain, at most {t.max_epochs} epochs"))
    if t.adapter == "lora":
        rows.append(("  teacher adapter", f"LoRA rank {t.lora_rank}"))
    if t.cpu_offload:
        rows.append(("  teacher CPU offload", "yes"))
    if t.staleness_steps:
        rows.append(("  teacher asynchronous", f"staleness {t.staleness_steps}"))
    rows.append(("  teacher checkpoint interval", f"{t.checkpoint_interval_minutes:g} min"))
    rows += [("  teacher " + label, value) for label, value in retention_rows(t.retention)]
    return rows


def retention_rows(retention) -> list[tuple[str, str]]:
    """The chosen checkpoint retention (a ``retention`` block's choice, ``models/cost/retention.py``); none without one."""
    if retention is None:
        return []
    tier = "hot (S3 Standard)" if retention.tier == "hot" else "cold (Glacier Instant Retrieval)"
    milestones = f" and {retention.milestones} milestones (cold)" if retention.milestones else ""
    return [("checkpoint retention", f"newest {retention.keep_last} kept, {tier}{milestones}; a rollback event goes "
             "back to the last good one (its re-work is in the failure rework hours)")]


def metric_rows(inst: Instance, m: Metrics) -> list[tuple[str, str]]:
    """The plan's metrics as report rows (cost, wall time, quality, forgetting, GPU-hours, memory per GPU)."""
    return [("cost", usd(m.cost_usd)), ("wall time", hours(m.wall_hours)),
            ("quality", f"{m.quality:.2f}  (from {inst.task.baseline_score:g})"),
            ("forgetting", f"{m.forgetting_points:.2f} points of {inst.task.general_score_baseline:g}"),
            ("GPU-hours", f"{m.gpu_hours:,.1f}"), ("memory per GPU", f"{m.memory_per_gpu_gb:,.1f} GB")]


def breakdown(values: dict[str, float], fmt, total_label: str) -> str:
    """A table of ``values`` (zeros left out), each with its share, and a total row ``total_label``."""
    total = sum(values.values())
    rows = [(k.replace("_", " "), fmt(v), f"{v / total:.0%}" if total else "-") for k, v in values.items() if v]
    rows.append((total_label, fmt(total), "100%" if total else "-"))
    return table(rows)


QUANTITY_LABELS = {"tokens_sampled": ("tokens sampled", "rollout decode tokens"),
                   "teacher_tokens_scored": ("teacher tokens scored", "OPD teacher forward tokens"),
                   "reward_calls": ("reward calls", "verifier calls, one per sample"),
                   "labels_bought": ("labels bought", "SFT examples bought"),
                   "checkpoints_written": ("checkpoints written", "expected: compute hours / interval"),
                   "checkpoints_kept": ("checkpoints kept", "held while training"),
                   "checkpoints_archived": ("checkpoints archived", "milestones kept cold after the run"),
                   "evaluations_run": ("evaluations run", "validation runs"),
                   "evaluation_tokens_decoded": ("evaluation tokens", "validation decode tokens"),
                   "gpu_hours": ("GPU-hours", "GPUs × training hours")}


def count(x: float) -> str:
    """A count for people: ``1.20 M`` / ``3.40 B`` from a million, whole from 100, three digits below."""
    for scale, suffix in ((1e9, " B"), (1e6, " M")):
        if abs(x) >= scale:
            return f"{x / scale:,.2f}{suffix}"
    return f"{x:,.0f}" if abs(x) >= 100 or x == int(x) else f"{x:,.3g}"


def quantities_table(q: dict[str, float]) -> str:
    """The plan's key quantities (``models/cost/quantities.py``) as a table, zeros left out, each with what it
    counts."""
    rows = [(QUANTITY_LABELS[k][0], count(v), QUANTITY_LABELS[k][1]) for k, v in q.items() if v and k in QUANTITY_LABELS]
    return table(rows or [("none", "-", "")])


def cost_split_text(m: Metrics) -> str:
    """One line: the fixed and elastic parts of the cost, and the lines the fixed part is in."""
    parts = ", ".join(f"{k.replace('_', ' ')} {usd(v)}" for k, v in m.fixed_cost_breakdown_usd.items() if v)
    share = m.fixed_cost_usd / m.cost_usd if m.cost_usd else 0.0
    return (f"  fixed {usd(m.fixed_cost_usd)} ({share:.0%}; does not scale with the plan's length or hours"
            + (f": {parts}" if parts else "") + f"), elastic {usd(m.elastic_cost_usd)}")


def releases_text(m: Metrics) -> list[str]:
    """With a ``releases`` block, one line: the count, the first and each later release's cost, the total."""
    r = m.releases
    if not r:
        return []
    later = (f", each later one {usd(r['later_release_usd'])} (SFT labels bought again: "
             f"{r['sft_labels_rebuilt_share']:.0%})" if r["count"] > 1 else "")
    return [f"  releases {r['count']}: the first {usd(r['first_release_usd'])}{later}; total {usd(r['total_usd'])} "
            "(the cost above; wall time, quality and forgetting are per release)"]


def environments_text(m: Metrics) -> list[str]:
    """With ``environments.pools``, one line per stage that runs environments: the pool, what it and the traffic
    cost (the environments line), and the hours of environment work on it."""
    out = []
    for row in m.environments:
        stage = f"stage {row['stage']}: " if len({r['stage'] for r in m.environments}) > 1 or row["stage"] > 1 else ""
        sandboxes = f", sandboxes used {usd(row['sandbox_usd'])}" if row["sandbox_usd"] else ""
        out.append(f"  environments: {stage}{row['workers']:,} workers ({row['kind'].replace('_', ' ')} pool "
                   f"{row['pool']}) held {usd(row['pool_usd'])}, traffic {usd(row['traffic_usd'])}{sandboxes}; "
                   f"{hours(row['environment_hours'])} of environment work on the pool"
                   + (" (overlapping generation)" if row["overlap"] == "agent_loop" else ""))
    return out


def pretraining_text(m: Metrics) -> list[str]:
    """With continued pre-training, one line under the cost breakdown: tokens, FLOPs, hours, corpus and the score it
    reaches (``models/cost/pretraining.py``)."""
    if not m.pretraining:
        return []
    from planopt.models.cost.pretraining import describe
    return ["  continued pre-training: " + describe(m.pretraining)]


def metrics_sections(m: Metrics) -> list[str]:
    """The report's cost breakdown, fixed vs elastic line, releases, environments, time breakdown and quantities,
    as lines."""
    return ["Cost breakdown", breakdown(m.cost_breakdown_usd, usd, "total"), cost_split_text(m), *releases_text(m),
            *environments_text(m), *pretraining_text(m),
            "", "Time breakdown", breakdown(m.hours_breakdown, hours, "wall time"),
            "", "Quantities", quantities_table(m.quantities)]


# How a person reads each limit's numbers, and the objective's.
LIMIT_FORMAT = {"budget_usd": lambda x: usd(x), "deadline_hours": lambda x: hours(x),
                "max_forgetting_points": lambda x: f"{x:,.2f} pts", "min_quality": lambda x: f"{x:,.2f} pts"}
OBJECTIVE_FORMAT = {"cost": LIMIT_FORMAT["budget_usd"], "time": LIMIT_FORMAT["deadline_hours"],
                    "quality": LIMIT_FORMAT["min_quality"], "forgetting": LIMIT_FORMAT["max_forgetting_points"]}


def relaxation_text(row: dict[str, Any], objective: str = "cost") -> str:
    """What relaxing a binding limit one step buys (a ``sensitivity`` row): ``to $66,000: better by $13,740``, or
    that it buys nothing. A limit binds when dropping it gives a better plan; the plans are discrete, so that
    plan may lie further away than one step."""
    fmt = LIMIT_FORMAT[row["constraint"]]
    step = fmt(row["relaxed_to"])
    if row.get("objective_after") is None:
        return f"to {step}: not re-solved (no answer in time)"
    imp = row.get("improvement")
    if not imp:
        return f"to {step} buys nothing: a better plan needs a larger relaxation"
    return f"to {step}: better by {OBJECTIVE_FORMAT[objective](abs(imp))}"


def limit_rows(binding: list[dict[str, Any]], objective: str = "cost") -> str:
    """A table of the active limits: value, the plan's, binding or not, and what relaxing each one step gives."""
    rows = []
    for b in binding:
        fmt = LIMIT_FORMAT[b["constraint"]]
        after = relaxation_text(b, objective) if b.get("binding") else ""
        rows.append((b["constraint"], fmt(b["limit"]), fmt(b["plan_value"]), "yes" if b.get("binding") else "no", after))
    return table(rows, header=("limit", "value", "plan", "binding", "relaxing one step"))


def price_row(inst: Instance, plan: Plan) -> tuple[str, str]:
    """Which price each GPU set of the plan is billed at and where it is bought (``hardware.plan_offers``): the
    provider, region and tier of its catalog offer, else the instance's own or the reference price."""
    from planopt.models.cost.hardware import plan_offers
    rows = list({(o["gpu"], o["count"]): o for o in plan_offers(inst, plan)}.values())
    parts = []
    for o in rows:
        tier = o["tier"].replace("_", "-")
        if o["provider"] is not None:
            where = f"{o['provider']} {o['region']}, {tier}, as of {o['as_of']}"
        elif o["source"] == "the instance's price":
            where = f"the instance's price, {tier}"
        else:
            where = f"gpus.json reference, {tier}, as of {o['as_of']}"
        parts.append(f"${o['usd_per_gpu_hour']:,.2f} per GPU-hour ({where})"
                     + (f" for {o['count']} × {o['gpu']}" if len(rows) > 1 else ""))
    return ("GPU price", "; ".join(parts))


def reuse_notes(inst: Instance, plan: Plan) -> list[str]:
    """``data_reuse.plan_note`` of each stage (of a staged plan's as if that stage ran alone)."""
    from planopt.models.cost.data_reuse import plan_note
    out = []
    for k, stage in enumerate(plan.stages, 1):
        note = plan_note(inst, Plan.of(stage.recipe, stage.hardware, plan.checkpoint_interval_minutes))
        if note:
            out.append((f"stage {k}, as if run alone: " if len(plan.stages) > 1 else "") + note)
    return out


def solve_report(inst: Instance, result) -> str:
    """The text report of a solve; printable on any UTF-8 terminal (``labels.printable``: a name from
    the user may hold a lone surrogate, which no encoder accepts)."""
    return printable(_solve_report(inst, result))


def objective_text(result) -> str:
    """The objective as the report's header names it: ``least cost``; over scenarios (``--confidence``) the measure
    it takes of them, ``least expected cost`` or ``least CVaR at 0.8 of cost (the mean of its worst 20% of
    scenarios)``."""
    measure = (result.risk or {}).get("objective_measure")
    name = OBJECTIVE_NAMES.get(result.objective, result.objective)
    if measure == "expected":
        most, metric = name.split(" ", 1)
        return f"{most} expected {metric}"
    if measure is not None and measure.startswith("cvar_"):
        level = float(measure.removeprefix("cvar_"))
        return f"least CVaR at {level:g} of cost (the mean of its worst {1 - level:.0%} of scenarios)"
    return name


def _solve_report(inst: Instance, result) -> str:
    head = f"planopt · {inst.name} · {result.status}"
    if result.gap is not None:
        head += f" (gap {result.gap:.2%})"
    head += f" · objective: {objective_text(result)}"
    out = [head, ""]
    if result.plan is None:
        out.append(result.message or "no plan")
        if result.relaxations:
            out.append("")
            out.append("What would make a plan exist:")
            limits = [r for r in result.relaxations if r.get("kind") is None]
            if limits:
                rows = [(r["constraint"], f"{r['required']:,.6g}", "together with the others below" if r["together"] else "alone")
                        for r in limits]
                out.append(table(rows, header=("relax", "to", "")))
            out += [f"  {r['constraint']}: {r['change']}  ({r['text']})" for r in result.relaxations
                    if r.get("kind") in ("hardware", "option")]
        return "\n".join(out)
    student_rows = []
    if inst.candidate_students and result.student:  # the chosen student's scores are the ones that apply
        others = [n for n in inst.student_names() if n != result.student]
        student_rows = [("student", f"{result.student}  (chosen over {', '.join(others)})")]
        inst = inst.for_student(result.student)
    out += ["Plan", table(student_rows + plan_rows(result.plan, inst) + [price_row(inst, result.plan)]), "",
            "Results", table(metric_rows(inst, result.metrics))]
    notes = reuse_notes(inst, result.plan)
    if notes:
        out += ["", "Data reuse"] + ["  " + note for note in notes]
    if result.binding:
        out += ["", "Limits", limit_rows(result.binding, result.objective)]
    out += [""] + metrics_sections(result.metrics)
    if result.spend is not None:
        first = " of the first release" if result.metrics is not None and result.metrics.releases else ""
        out += ["", f"Budget and alert lines (cumulative planned spend{first} from the start, at the plan's point estimate; how often the budget holds is the Risk section's)"] + spend_text(result.spend)
    out += ["", f"model built in {result.build_seconds:.2f} s, solved in {result.solve_seconds:.2f} s"]
    return "\n".join(out)


def spend_text(spend: dict) -> list[str]:
    """The report's budget and alert lines (``models/cost/spend.py``, ``spend_lines``): the day and hour since the
    start at which the plan's cumulative planned spend reaches each, or that it never does."""
    total = f"the plan's total is {usd(spend['total_usd'])}"
    if not spend["lines"]:
        return [f"  no budget (constraints.budget_usd), so no line to reach; {total}"]
    out = []
    for name, line in spend["lines"].items():
        label = (f"alert line {usd(line['usd'])} ({spend['alert_share']:.0%} of the budget)" if name == "alert"
                 else f"budget {usd(line['usd'])}")
        reached = line["reached"]
        when = (f"never reached ({total})" if reached is None
                else f"reached on day {reached['day']}, hour {reached['hour']:,.1f} since the start")
        out.append(f"  {label}: {when}")
    return out
