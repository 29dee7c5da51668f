"""`planopt solve` on every shipped single-job instance, against the bare Pyomo import.

Run:  python benchmarks/bench_instances.py [--repeats N] [--environments | --levers | --chance]   (BENCHMARKS.md §9, §22)

Issue 12's target: with every decision enabled, `planopt solve` on each shipped instance
under 5 s on 2 cores. Each command is the README's default (`planopt solve FILE`: the
Limits table's re-solves and the risk over 1,000 scenarios included). The commands are
interleaved (one of each, N times) so that a change in the machine's load hits them
alike; the table reports the median, the min, the exit code and the load average
before the run. Portfolios (`portfolio-*.json`) have their own benchmark
(`bench_portfolio.py`).

``--environments`` (issue 27, lever 1: "every shipped single-job instance still solves in under 5 s on 2 cores
with all new options on") solves each instance with the environment pools of
``instances/qwen3-32b-agentic-rl-environments.json`` added (``ENVIRONMENTS``: the GPU nodes' CPUs and three
sandbox pools, an agent loop, traffic and API calls, the CPU-seconds per sample given a range; an instance
without environment work gets 30 CPU-seconds per sample), each written beside its original for the run (relative
paths in it still resolve) and removed after.

``--levers`` adds, on top of the pools, every other option issue 27 added where the instance can take it: a
teacher precision per phase (``teacher.precision_by_phase``, with int8 added where fewer than two precisions are
offered) on an OPD job of two or more phases; continued pre-training (``LEVER_TOKENS`` at ``LEVER_USD_PER_BILLION``,
the shipped ``math-8b-pretrained-or-32b.json``'s price) on a job without ``releases`` (refused together); and
asynchronous OPD on an OPD job that offers staleness and rollout GPUs.

``--chance`` (issue 23: "every shipped single-job instance with ``--confidence 0.8 --scenarios 200``: under 20 s on 2
cores") solves each instance chance-constrained (``CHANCE_ARGS``, with ``--json``) against ``CHANCE_TARGET_SECONDS``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_SECONDS = 5.0   # issue 12: "under 5 s on 2 cores"
CHANCE_ARGS = ["--confidence", "0.8", "--scenarios", "200", "--json"]
CHANCE_TARGET_SECONDS = 20.0   # issue 23: "under 20 s on 2 cores"


def shipped_instances() -> list[Path]:
    """Every shipped single-job instance (not portfolios, calibration cases or the Hugging Face configs of instances/hf)."""
    paths = sorted(ROOT.glob("instances/*.json")) + sorted(ROOT.glob("instances/*/*.json"))
    jobs = [p for p in paths if not p.name.startswith("portfolio") and p.parent.name not in ("calibration", "calibration-validation", "hf", "plans")]
    return [p for p in jobs if "prices" not in json.loads(p.read_text())]  # a price file (catalog import) is no job


def with_environments(path: Path) -> Path:
    """A copy of the instance at ``path`` with every option of the environments lever on, written beside it."""
    doc = json.loads(path.read_text())
    shipped = json.loads((ROOT / "instances" / "qwen3-32b-agentic-rl-environments.json").read_text())
    env = dict(shipped["environments"], latency_seconds_per_step=doc.get("environments", {}).get("latency_seconds_per_step", 0.0),
               api_calls_per_sample=1.0, usd_per_api_call=0.001)
    env["cpu_seconds_per_sample"] = doc.get("environments", {}).get("cpu_seconds_per_sample") or 30.0
    doc["environments"] = env
    doc["uncertainty"] = {**doc.get("uncertainty", {}), "environments.cpu_seconds_per_sample":
                          {"low": env["cpu_seconds_per_sample"] / 1.5, "high": env["cpu_seconds_per_sample"] * 1.5}}
    out = path.with_name(f".bench-environments-{path.name}")
    out.write_text(json.dumps(doc))
    return out


LEVER_TOKENS = [0.0, 1e9, 5e9]          # continued pre-training options of --levers (tokens)
LEVER_USD_PER_BILLION = 100.0            # the corpus price of instances/math-8b-pretrained-or-32b.json


def with_levers(path: Path) -> Path:
    """``with_environments``' copy with issue 27's other options on where the instance can take them (module
    docstring)."""
    out = with_environments(path)
    doc = json.loads(out.read_text())
    training = doc["training"]
    methods = training.get("methods", {})
    if "opd" in methods and doc.get("teacher") and training.get("phases", 3) >= 2:
        precisions = list(dict.fromkeys(doc["teacher"].get("precision_options", ["bf16"])))
        doc["teacher"]["precision_options"] = precisions if len(precisions) >= 2 else precisions + ["int8"]
        doc["teacher"]["precision_by_phase"] = True
    if "releases" not in doc:
        doc["continued_pretraining"] = {"tokens_options": LEVER_TOKENS, "usd_per_billion_tokens": LEVER_USD_PER_BILLION}
    if "opd" in methods and doc.get("hardware", {}).get("rollout_gpus") and any(training.get("staleness_steps_options", [0])):
        training["asynchronous_opd"] = True
    out.write_text(json.dumps(doc))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    what = ap.add_mutually_exclusive_group()   # one table per run: a second flag is refused, not ignored
    what.add_argument("--environments", action="store_true", help="every instance with the environment pools added")
    what.add_argument("--levers", action="store_true", help="the pools and every other option of issue 27 added")
    what.add_argument("--chance", action="store_true", help="each instance with --confidence 0.8 --scenarios 200")
    args = ap.parse_args()
    exe = str(Path(sys.executable).with_name("planopt"))
    cases = {"`python -c \"import pyomo.environ\"` (the floor)": [sys.executable, "-c", "import pyomo.environ"]}
    written = []
    for p in shipped_instances():
        if args.environments or args.levers:
            written.append(with_levers(p) if args.levers else with_environments(p))
            what = "every lever" if args.levers else "pools"
            cases[f"`planopt solve {p.relative_to(ROOT / 'instances')}` with {what}"] = [exe, "solve", str(written[-1])]
        elif args.chance:
            cases[f"`planopt solve {p.relative_to(ROOT / 'instances')} {' '.join(CHANCE_ARGS)}`"] = [exe, "solve", str(p), *CHANCE_ARGS]
        else:
            cases[f"`planopt solve {p.relative_to(ROOT / 'instances')}`"] = [exe, "solve", str(p)]
    try:
        run(cases, args.repeats, CHANCE_TARGET_SECONDS if args.chance else TARGET_SECONDS)
    finally:
        for path in written:
            path.unlink()


def run(cases: dict, repeats: int, target: float = TARGET_SECONDS) -> None:
    """Run each command ``repeats`` times, interleaved, and print the table (``target``: the seconds each must be
    under)."""
    args = argparse.Namespace(repeats=repeats)
    times = {name: [] for name in cases}
    codes = {}
    load = os.getloadavg()
    for _ in range(args.repeats):
        for name, cmd in cases.items():
            start = time.perf_counter()
            codes[name] = subprocess.run(cmd, capture_output=True, check=False).returncode
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(next(iter(times.values())))
    print(f"_{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average before: "
          f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}; {args.repeats} interleaved runs each._\n")
    print(f"| command | median s | min s | exit code | median / bare Pyomo import | under {target:g} s |")
    print("|---|---:|---:|---:|---:|---|")
    for name, t in times.items():
        med = statistics.median(t)
        print(f"| {name} | {med:.2f} | {min(t):.2f} | {codes[name]} | {med / floor:.2f} | "
              f"{'yes' if med < target else '**no**'} |")


if __name__ == "__main__":
    main()
