"""Model memory by plan-space size: the measurements behind ``solver/job/plan_space.py``'s coefficients and cap.

Run:  python benchmarks/model_memory.py

Each row is an edit of ``instances/qwen3-8b-math.json`` solved by ``planopt solve FILE --no-sensitivity
--json`` in its own process under ``/usr/bin/time -f %M`` (peak resident memory). The table gives the
plan-space counts, the measured peak, the estimate of ``plan_space.model_mib`` and the per-recipe or
per-hardware-choice memory above the unedited instance's peak. Prints one markdown table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def variants() -> dict[str, dict]:
    base = json.loads((ROOT / "instances" / "qwen3-8b-math.json").read_text())
    out = {"as shipped": base}
    for n in (1000, 4000):
        raw = json.loads(json.dumps(base))
        raw["hardware"] = {"gpus": [{"name": "H100-SXM", "counts": list(range(8, 8 + 8 * n, 8))}]}
        out[f"{n:,} counts of one GPU type"] = raw
    for phases in (5, 6):
        raw = json.loads(json.dumps(base))
        raw["training"].update(phases=phases, taper_only=False, samples_per_prompt_options=[2, 4, 8, 16])
        out[f"{phases} phases × 4 sample options, no taper"] = raw
    return out


def main() -> None:
    from planopt.instance import load_instance
    from planopt.job.plan_space import plan_space
    planopt = str(Path(sys.executable).parent / "planopt")
    rows, base_kib = [], None
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        for label, raw in variants().items():
            path = Path(tmp) / "instance.json"
            path.write_text(json.dumps(raw))
            space = plan_space(load_instance(raw))
            start = time.perf_counter()
            run = subprocess.run(["/usr/bin/time", "-f", "%M", planopt, "solve", str(path), "--no-sensitivity", "--json"],
                                 capture_output=True, text=True)
            seconds = time.perf_counter() - start
            peak_kib = int(run.stderr.strip().splitlines()[-1])
            status = json.loads(run.stdout)["status"]
            base_kib = base_kib or peak_kib
            rows.append((label, space, peak_kib, seconds, status))
    print(f"load average before: {load:.1f}\n")
    print("| instance | recipes | hardware choices | plans | solve s | peak MiB | estimate MiB | above as shipped, KiB per recipe | per hardware choice | status |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    first = rows[0][1]
    for label, space, peak, seconds, status in rows:
        extra = peak - base_kib
        per_r = f"{extra / (space.recipes - first.recipes):.1f}" if space.recipes > first.recipes else "-"
        per_h = f"{extra / (space.hardware - first.hardware):.1f}" if space.hardware > first.hardware else "-"
        print(f"| {label} | {space.recipes:,} | {space.hardware:,} | {space.plans:,} | {seconds:.1f} | {peak / 1024:.0f} "
              f"| {space.model_mib:.0f} | {per_r} | {per_h} | {status} |")


if __name__ == "__main__":
    main()
