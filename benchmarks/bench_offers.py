"""Provider and region as decisions: what choosing among offers buys, and what it costs to solve.

Run: ``.venv/bin/python benchmarks/bench_offers.py [--jobs 10,20] [--gpu-types 4] [--seeds 1,2,3]
[--offers 3] [--time-limit 60]``.

For each generated portfolio (``planopt generate portfolio --offers K``: each GPU type the price
catalog sells offered by up to K of its sellers, at the catalog's prices, 26 weekly buckets) it
solves

- *cheapest listed offer*: the same portfolio keeping, of each GPU type, only the offer with the
  least on-demand list price (what a team gets that picks one provider per type by its price list
  and fixes it in the file);
- *every offer*: the MIP chooses the offer of each job and what to reserve where.

Both with ``solve_portfolio(time_limit=..., rel_gap=0.01)``, the limit counting the whole solve.
Each row: status, gap, cost, bound, wall seconds, the number of pools, how many jobs run on another
offer than their type's cheapest listed one, the replay's problems, and the load average before and after.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import time

from planopt.portfolio.generate import random_portfolio
from planopt.portfolio.solve import load_portfolio, solve_portfolio
from planopt.portfolio.replay import replay_schedule


def cheapest_listed(pdata) -> dict[str, str]:
    """GPU type -> its offer of least on-demand list price (ties: the first listed); an offer with no
    on-demand GPUs (a reservation-only capacity block) lists no on-demand price and is never it."""
    best: dict[str, tuple[float, str]] = {}
    for key in pdata.gpus:
        price = min(pdata.od_price[key]) if any(pdata.od_avail[key]) else float("inf")
        name = pdata.gpu_type[key]
        if name not in best or price < best[name][0]:
            best[name] = (price, key)
    return {name: key for name, (_, key) in best.items()}


def cheapest_listed_offer(p: dict) -> dict:
    """The portfolio with, of each GPU type, its cheapest listed offer alone."""
    q = copy.deepcopy(p)
    pdata = load_portfolio(p)
    keep = set(cheapest_listed(pdata).values())
    q["gpus"] = [g for key, g in zip(pdata.gpus, q["gpus"]) if key in keep]
    return q


def run(p: dict, label: str, time_limit: float) -> dict:
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    res = solve_portfolio(p, time_limit=time_limit, rel_gap=0.01)
    wall = time.perf_counter() - t0
    pdata = load_portfolio(p)
    cheapest = cheapest_listed(pdata)
    row = {"label": label, "pools": len(pdata.gpus), "status": res.status, "gap": res.gap, "cost_usd": res.cost_usd,
           "bound_usd": res.bound_usd, "wall_s": round(wall, 1),
           "jobs_off_cheapest_listed": sum(1 for j in res.jobs if cheapest[pdata.gpu_type[j.plan.gpu]] != j.plan.gpu),
           "providers_used": sorted({pdata.provider[j.plan.gpu] for j in res.jobs}),
           "replay_problems": len(replay_schedule(pdata, json.loads(json.dumps(res.to_dict())))) if res.jobs else None,
           "load_average_before": round(load_before, 2), "load_average_after": round(os.getloadavg()[0], 2)}
    print(json.dumps(row), flush=True)
    return row


def render(rows: list[dict]) -> str:
    head = ("portfolio", "pools", "status", "gap", "cost $", "bound $", "wall s", "jobs off the cheapest listed offer", "providers used",
            "replay problems", "load avg before → after")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        gap = "-" if r["gap"] is None else f"{100 * r['gap']:.2f} %"
        cost = "-" if r["cost_usd"] is None else f"{r['cost_usd']:,.0f}"
        bound = "-" if r["bound_usd"] is None else f"{r['bound_usd']:,.0f}"
        out.append(f"| {r['label']} | {r['pools']} | {r['status']} | {gap} | {cost} | {bound} | {r['wall_s']} | "
                   f"{r['jobs_off_cheapest_listed']} | {', '.join(r['providers_used'])} | {r['replay_problems']} | "
                   f"{r['load_average_before']} → {r['load_average_after']} |")
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", default="10,20")
    ap.add_argument("--gpu-types", type=int, default=4)
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--offers", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    rows = []
    for n in [int(x) for x in args.jobs.split(",")]:
        for seed in [int(x) for x in args.seeds.split(",")]:
            p = random_portfolio(n, args.gpu_types, 26, seed=seed, offers=args.offers)
            tag = f"{n} jobs × {args.gpu_types} types, seed {seed}"
            rows.append(run(cheapest_listed_offer(p), f"{tag}, cheapest listed offer only", args.time_limit))
            rows.append(run(p, f"{tag}, every offer (up to {args.offers})", args.time_limit))
    print(render(rows))


if __name__ == "__main__":
    main()
