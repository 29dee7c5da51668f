"""Size and shape of the product code (models/ + solver/): lines, the largest modules and functions.

Run from the project's root: ``python benchmarks/code_metrics.py [--json]``. Lines are physical lines of
``*.py`` files (docstrings and comments included, as ``wc -l`` counts them); a function's length runs from
its ``def`` line to its last line (``ast`` end_lineno), nested functions counted in their parent too.
BENCHMARKS.md §11 records the figures before and after issue 23.
"""

from __future__ import annotations

import ast
import json
import pathlib
import sys

ROOTS = ("models", "solver")


def python_files(root: pathlib.Path) -> list[pathlib.Path]:
    return sorted(f for folder in ROOTS for f in (root / folder).rglob("*.py"))


def functions(path: pathlib.Path) -> list[tuple[str, int]]:
    """(qualified name, lines) of every function and method in ``path``."""
    tree = ast.parse(path.read_text())
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append((f"{prefix}{child.name}", child.end_lineno - child.lineno + 1))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")

    walk(tree, "")
    return out


def measure(root: pathlib.Path) -> dict:
    files = python_files(root)
    sizes = {str(f.relative_to(root)): len(f.read_text().splitlines()) for f in files}
    funcs = [(f"{f.relative_to(root)}:{name}", n) for f in files for name, n in functions(f)]
    funcs.sort(key=lambda item: -item[1])
    modules = sorted(sizes.items(), key=lambda item: -item[1])
    return {"lines": sum(sizes.values()), "modules": len(sizes),
            "largest_modules": modules[:5], "modules_over_700": [m for m in modules if m[1] > 700],
            "largest_functions": funcs[:5], "functions_over_80": [f for f in funcs if f[1] > 80]}


def main() -> None:
    out = measure(pathlib.Path.cwd())
    if "--json" in sys.argv:
        print(json.dumps(out, indent=1))
        return
    print(f"product code: {out['lines']:,} lines in {out['modules']} modules")
    print("largest modules: " + ", ".join(f"{m} ({n})" for m, n in out["largest_modules"]))
    print("largest functions: " + ", ".join(f"{m} ({n})" for m, n in out["largest_functions"]))
    print(f"modules over 700 lines: {len(out['modules_over_700'])}; functions over 80 lines: {len(out['functions_over_80'])}")


if __name__ == "__main__":
    main()
