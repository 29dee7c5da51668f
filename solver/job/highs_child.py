r"""A HiGHS run that can be stopped: the same arrays, solved in a child process killed at its deadline.

HiGHS checks its clock between steps, not inside all of them. At the root of every MIP it computes an analytic
centre (``HighsMipSolverData::startAnalyticCenterComputation``, an interior-point solve of up to 200 iterations
with no time limit, run unconditionally since HiGHS 1.15), and waits for it before it returns, whatever its time
limit: on the split-rollout job with staleness options 0–2 at 200 scenarios it ran 6–20 s of an explanation's
run limited to 8.5 s (BENCHMARKS.md §14). No HiGHS option bounds it and no callback reaches inside it.

A run whose time limit must hold whatever HiGHS does is therefore run here: the model's arrays (the same ones
``highs_arrays.ArrayHighs`` hands to HiGHS in process) go to one child process through a pipe; it solves them
with the same options and the time the deadline leaves, and sends back the answer; at the deadline (plus
``KILL_GRACE_SECONDS`` for an answer on its way) the parent kills it and reads the run as stopped at its limit
with no solution. One process for one run, not a pool: nothing is shared and nothing outlives the call.

This module imports only the standard library at its top, so that the child (``python -m
planopt.job.highs_child``) starts with numpy and highspy alone; the parent's side is :func:`run_stoppable`.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
from typing import Any, Optional

# Seconds a child is left past its deadline to send the answer HiGHS gave at its own limit, before it is killed.
# Sending 10^6 column values through the pipe takes ~0.05 s (pickle of a float64 array); HiGHS itself stops at
# its limit when it is not inside a step that checks no clock.
KILL_GRACE_SECONDS = 0.3
# Seconds from starting the child to its HiGHS run: Python, numpy and highspy imported, the arrays read.
# `benchmarks/stoppable_run.py` measured 0.10-0.11 s for a one-column LP on an idle machine (2026-12-03, BENCHMARKS.md
# §16); about 3x that is kept for a loaded machine and a larger model's arrays. A run is not started with less left.
CHILD_START_SECONDS = 0.3


def answer_of(h) -> dict[str, Any]:
    """What a finished HiGHS run holds that the caller reads: its model status (by name), whether it has a
    feasible primal solution, the objective, the MIP's dual bound and the column values."""
    info = h.getInfo()
    has = info.primal_solution_status == 2  # kSolutionStatusFeasible
    return {"status": h.getModelStatus().name, "has_solution": bool(has),
            "objective": float(info.objective_function_value), "dual_bound": float(info.mip_dual_bound),
            "values": list(h.getSolution().col_value) if has else None}


def stopped_answer() -> dict[str, Any]:
    """The answer of a run killed at its deadline: stopped at its time limit, no solution."""
    inf = float("inf")
    return {"status": "kTimeLimit", "has_solution": False, "objective": inf, "dual_bound": inf, "values": None}


def run_stoppable(problem: dict[str, Any], options: dict[str, Any], deadline: float,
                  log: Optional[list] = None) -> dict[str, Any]:
    """Solve ``problem`` (``passModel``'s arguments by name, ``start``: column values or None, and ``partial``:
    (column indices, values) of a partial start or None) with HiGHS
    ``options`` in a child process, by the ``time.perf_counter()`` ``deadline``: the child's answer, or
    :func:`stopped_answer` when it is not back by the deadline plus ``KILL_GRACE_SECONDS``. HiGHS's log goes to
    each stream of ``log`` after the run (none: no log)."""
    wall_deadline = time.time() + (deadline - time.perf_counter())
    blob = pickle.dumps({"problem": problem, "options": options, "wall_deadline": wall_deadline, "log": bool(log)},
                        protocol=pickle.HIGHEST_PROTOCOL)
    child = subprocess.Popen([sys.executable, "-m", "planopt.job.highs_child"], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = child.communicate(blob, timeout=max(0.0, deadline - time.perf_counter()) + KILL_GRACE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        out, err = child.communicate()
        answer = stopped_answer()
    else:
        if child.returncode != 0 or not out:
            raise RuntimeError("the HiGHS run in a child process failed: "
                               + (err.decode(errors="replace").strip().splitlines() or ["no message"])[-1])
        answer = pickle.loads(out)
    finally:
        if child.poll() is None:  # an interrupt (Ctrl-C) while waiting: nothing outlives the call
            child.kill()
            child.wait()
    for stream in log or []:
        stream.write(err.decode(errors="replace"))
    return answer


def _child() -> None:
    """The child's side: read the request from stdin, solve, write the answer to the stdout it was given (HiGHS's
    banner and log go to stderr)."""
    request = pickle.loads(sys.stdin.buffer.read())
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # HiGHS prints its banner on stdout when it is constructed
    import highspy
    import numpy as np
    p, options = request["problem"], request["options"]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.passModel(p["num_col"], p["num_row"], p["num_nz"], p["a_format"], p["sense"], p["offset"], p["col_cost"],
                p["col_lower"], p["col_upper"], p["row_lower"], p["row_upper"], p["a_start"], p["a_index"],
                p["a_value"], p["integrality"])
    for name, value in options.items():
        h.setOptionValue(name, value)
    if p.get("start") is not None:
        solution = highspy.HighsSolution()
        solution.col_value = np.asarray(p["start"], dtype=float).tolist()
        solution.value_valid = True
        h.setSolution(solution)
    if p.get("partial") is not None:   # a partial start: HiGHS completes it by a sub-MIP
        index, values = p["partial"]
        h.setSolution(len(index), index, values)
    h.setOptionValue("time_limit", max(1e-3, request["wall_deadline"] - time.time()))
    h.setOptionValue("output_flag", request["log"])
    h.setOptionValue("log_to_console", request["log"])
    h.run()
    with os.fdopen(answer_fd, "wb") as out:
        pickle.dump(answer_of(h), out, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    _child()
