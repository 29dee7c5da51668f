"""The full fuzzer of issue 13: every mutated instance and portfolio of ``tests/support/fuzzing.py``.

Run:  python benchmarks/fuzz.py [--per-base 260] [--seed 0]

Runs ``planopt validate FILE`` and ``planopt solve FILE --json`` on each of ``6 × per-base`` mutated inputs
and ``7 × field-per-base`` of the fields added since (issue 28), and ``planopt fit INSTANCE PILOT.csv --json``
on ``field-per-base`` mutated pilots (2,040 inputs by default, 4,020 runs), and prints, as markdown, the runs by command and exit code, the cases by
mutation, and every run that broke the contract (a traceback, an exit code outside {0, 2, 3, 4}, ``--json``
stdout that is not one strict JSON object, or an input error that is not one ``error:`` line). Exits 1 when
any run broke it. ``tests/solver/cli/test_fuzz.py`` runs a seeded sample of the same cases on every test run.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.support.fuzzing import cases, run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-base", type=int, default=260)
    parser.add_argument("--field-per-base", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only-fields", action="store_true", help="only the bases of the fields added since issue 13")
    args = parser.parse_args()
    all_cases = cases(args.per_base, args.seed, args.field_per_base)
    if args.only_fields:
        all_cases = [c for c in all_cases if c.is_field_base]
    start = time.perf_counter()
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        for n, case in enumerate(all_cases, 1):
            outcomes.extend((case, o) for o in run(case, Path(folder)))
            if n % 100 == 0:
                print(f"{n}/{len(all_cases)} cases, {time.perf_counter() - start:.0f} s", file=sys.stderr)
    seconds = time.perf_counter() - start
    print(f"{len(all_cases):,} mutated inputs, {len(outcomes):,} runs, {seconds:.0f} s\n")
    print("| command | exit 0 | exit 2 | exit 3 | exit 4 | other |")
    print("|---|---:|---:|---:|---:|---:|")
    groups = [("", outcomes), (" (issue 13's bases)", [(c, o) for c, o in outcomes if not c.is_field_base]),
              (" (issue 28's fields)", [(c, o) for c, o in outcomes if c.is_field_base])]
    for label, group in groups if not args.only_fields else groups[:1]:
        codes = collections.Counter((o.command, o.exit_code) for _, o in group)
        for command in ("validate", "solve", "fit"):
            if not any(c == command for c, _ in codes):
                continue
            other = sum(v for (c, code), v in codes.items() if c == command and code not in (0, 2, 3, 4))
            print(f"| {command}{label} | " + " | ".join(f"{codes[(command, k)]:,}" for k in (0, 2, 3, 4)) + f" | {other:,} |")
    by_op = collections.Counter(case.operation for case in all_cases)
    print("\n| mutation | cases |\n|---|---:|")
    for op, n in sorted(by_op.items()):
        print(f"| {op} | {n:,} |")
    by_base = collections.Counter(case.base for case in all_cases)
    print("\n| base | cases |\n|---|---:|")
    for base, n in by_base.items():
        print(f"| {base} | {n:,} |")
    broken = [(case, o) for case, o in outcomes if o.problem]
    print(f"\nruns that broke the contract: {len(broken)}")
    for case, o in broken:
        print(f"- {case.id} ({case.where}) {o.command}: {o.problem}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
