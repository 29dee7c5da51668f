"""How ``planopt replan`` shows the rest of a run: the verdict line, then the original plan's remaining steps
against the replan (what changes, what the rest and the whole run cost, take and reach), and what it buys."""

from __future__ import annotations

from planopt.report.text import hours, table, usd


def _plan_cells(option, state) -> tuple[str, str, str, str]:
    if option is None:
        return ("-", "-", "-", "-")
    if option.plan is None:
        return ("stop now", "0", f"{state.gpu_count} × {state.gpu} (released)", "-")
    stages = option.plan.stages   # a staged rest: its stages joined by " then "
    return (" then ".join(s.method for s in stages), " + ".join(f"{s.recipe.steps:,}" for s in stages),
            " then ".join(f"{s.hardware.count} × {s.hardware.gpu}" for s in stages),
            f"{option.plan.checkpoint_interval_minutes:g} min")


def _figures(result, option) -> tuple[str, ...]:
    if option is None:
        return ("-",) * 7
    whole = result.whole_run(option)
    return (usd(option.cost_usd), hours(option.wall_hours), f"{option.quality:.2f}",
            usd(whole["cost_usd"]), hours(whole["wall_hours"]), f"{whole['forgetting_points']:.2f}",
            "-" if option is None else f"{option.forgetting_points:.2f}")


def _share(value) -> str:
    return "-" if value is None else f"{value:.1%}"


def replan_report(result) -> str:
    """The verdict, the run's state and what the rest starts from, and the comparison table."""
    s, rest = result.state, result.rest
    lim = rest.stay.constraints
    remaining = ", ".join(f"{name} {text}" for name, value, text in (
        ("budget", lim.budget_usd, usd(lim.budget_usd) if lim.budget_usd is not None else ""),
        ("deadline", lim.deadline_hours, hours(lim.deadline_hours) if lim.deadline_hours is not None else ""),
        ("forgetting", lim.max_forgetting_points, f"{lim.max_forgetting_points:.2f} points" if lim.max_forgetting_points is not None else ""),
        ("quality floor", lim.min_quality, f"{lim.min_quality:g}" if lim.min_quality is not None else "")) if value is not None)
    forgot = f"{rest.forgetting_so_far:.2f} points" + ("" if rest.forgetting_measured else " (the fitted model's; not logged)")
    lines = [result.headline, "",
             f"Run {s.source}: step {s.last_step:,} of {s.plan_steps:,}"
             + (f" (stage {s.stage + 1} of {s.stages}, {s.method}, from step {s.stage_start:,})" if s.stages > 1 else "")
             + f", {hours(s.elapsed_hours)}, {usd(s.spend_usd)} spent "
             f"(sunk), score reached {rest.start_score:.2f} (fitted; last logged {float(s.task_score.values[-1]):.2f}), "
             f"forgetting so far {forgot}",
             f"Left for the rest: {remaining or 'no limits'}",
             _moves_line(result),
             f"Prompts drawn so far: {rest.prompts_drawn:,}, not counted for data reuse (the reuse model has no hook for them)",
             ""]
    rows = []
    for name, option, share in (("original plan, continued", result.continuing, result.shares.get("continuing")),
                                ("replan", result.chosen, result.shares.get("chosen"))):
        rows.append((name, *_plan_cells(option, s), *_figures(result, option), _share(share)))
    lines.append(table(rows, header=("rest", "method", "more steps", "GPUs", "interval", "rest USD", "rest hours",
                                     "quality", "run USD", "run hours", "run forgetting", "rest forgetting",
                                     "meets every limit")))
    what = "scenarios of the updated uncertainty model" + (f"; the replan holds at {result.confidence:.0%}"
                                                          if result.confidence is not None else "")
    changes = result.changes()
    if result.chosen is not None and result.continuing is not None:
        lines += ["", "What changes: " + ("; ".join(changes) if changes else "nothing (the original plan is still the best rest)")]
    lines += ["", f"Shares: {result.scenarios:,} {what}.",
              "Options weighed: " + (", ".join(f"{_label(o)} ({usd(o.cost_usd)}, {hours(o.wall_hours)}, {o.quality:.2f})"
                                               for o in result.options) or "none meets every limit, stopping now included")]
    return "\n".join(lines)


def _moves_line(result) -> str:
    """What moving costs: the chosen move's, else the range over the targets (checkpoint write, read, restart)."""
    moves = [m for m, _ in result.rest.moves]
    chosen = result.chosen.move if result.chosen is not None else None
    if chosen is not None:
        return (f"Moving to {chosen.count} × {chosen.gpu} costs {usd(chosen.usd)} and {hours(chosen.hours)} "
                "(checkpoint write here, its read and the restart there)")
    if not moves:
        return "Moving hardware: no other GPUs, or no time left for a move"
    cheap, dear = min(moves, key=lambda m: m.usd), max(moves, key=lambda m: m.usd)
    return (f"Moving hardware costs {usd(cheap.usd)} ({cheap.count} × {cheap.gpu}) to {usd(dear.usd)} "
            f"({dear.count} × {dear.gpu}) and {hours(min(m.hours for m in moves))} to "
            f"{hours(max(m.hours for m in moves))} (checkpoint write here, its read and the restart there)")


def _label(option) -> str:
    """An option's name: stop, stay, or the move with its target."""
    m = option.move
    return option.choice if m is None else f"move to {m.count} × {m.gpu}"
