"""The layout rule (issue 23 items 4-5): the modules of ``models/`` (``planopt.models``) and ``solver/``
(``planopt``) live in rooms, one concept each; no module imports a room above its own, and no import
closes a cycle. Every import statement counts, at module level or inside a function (a lazy import
that keeps ``planopt --help`` fast is fine where it imports no room above and closes no cycle);
imports under ``if TYPE_CHECKING:`` do not. The lint (ruff, configured in ``pyproject.toml``) runs on the
same product code."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"models": "planopt.models", "solver": "planopt"}

# The rooms, lowest first. A module may import modules of its own room and of the rooms before it,
# never of a room after it. A room is a module prefix (a package, or one module), or a tuple of them.
ROOMS = (
    ("planopt", "planopt.models"),  # the packages' own __init__ (planopt's names load lazily, by name)
    "planopt.models.catalog",       # sourced numbers, defaults, spreads
    "planopt.models.schema",        # input shapes only
    "planopt.models.cost",          # the evaluator and its physics
    "planopt.models.uncertainty",
    "planopt.models.consistency",   # the checks of a parsed instance that need the domain
    "planopt.models.formulation",
    ("planopt.errors", "planopt.messages", "planopt.json_safe", "planopt.verbosity", "planopt.instance"),  # the floor
    "planopt.job",
    "planopt.oracles",
    "planopt.uncertainty",
    "planopt.runs",                 # a run in flight: its logs, its measured state, tracking it (uses fit's update)
    "planopt.studies",
    "planopt.portfolio",
    "planopt.report",
    "planopt.export",               # plans written as launcher and framework configs
    # The top: the Python API, the service on it, and the CLI, which serves the service (``planopt serve``).
    "planopt.api",
    "planopt.service",
    "planopt.cli",
)

# Still the other engineer's, whose modules are being replaced: remove an entry with them (the
# test below fails on an entry that is no longer needed).
ALLOWED_CYCLES: dict = {}
ALLOWED_UPWARD = {
}


def modules() -> dict[str, Path]:
    found = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The nodes under ``if TYPE_CHECKING:`` (its body, not an ``else``)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``name`` imports (a package's ``__init__`` counts as the package;
    the module's own packages do not count)."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_only(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        out.update(t for t in targets if t in known and t != name and not name.startswith(t + "."))
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def room_of(name: str) -> int | None:
    """The index in ROOMS of the longest prefix of ``name`` (None: no room)."""
    best, best_len = None, -1
    for n, room in enumerate(ROOMS):
        for prefix in (room if isinstance(room, tuple) else (room,)):
            if (name == prefix or name.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = n, len(prefix)
    return best


def strongly_connected(g: dict[str, set[str]]) -> list[set[str]]:
    """The cycles of ``g``: its strongly connected sets of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in g:
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, edges = work[-1]
            w = next(edges, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(g[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(comp)
    return found


def upward_imports(g: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, targets in g.items() for b in targets if room_of(b) > room_of(a)}


def test_every_module_has_a_room():
    assert [name for name in modules() if room_of(name) is None] == []


def test_no_import_cycle():
    cycles = strongly_connected(graph())
    unexpected = [sorted(c) for c in cycles if not any(c <= allowed for allowed in ALLOWED_CYCLES.values())]
    assert unexpected == [], "import cycles (break them; see ROOMS): " + "; ".join(", ".join(c) for c in unexpected)


def test_no_module_imports_a_room_above_its_own():
    upward = sorted(upward_imports(graph()) - set(ALLOWED_UPWARD))
    assert upward == [], "imports of a room above (move the shared code down, or the call up): " + \
        "; ".join(f"{a} -> {b}" for a, b in upward)


def test_the_allow_lists_hold_only_what_is_still_there():
    g = graph()
    cycles = strongly_connected(g)
    stale = [what for what, allowed in ALLOWED_CYCLES.items() if not any(c <= allowed for c in cycles)]
    stale += [f"{a} -> {b}" for a, b in set(ALLOWED_UPWARD) - upward_imports(g)]
    assert stale == [], "no longer needed, remove from tests/test_layout.py: " + "; ".join(stale)


def test_the_checker_sees_lazy_imports_and_skips_type_checking_blocks(tmp_path):
    """The parser itself: an import inside a function counts, one under ``if TYPE_CHECKING:`` does not."""
    path = tmp_path / "probe.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from planopt.cli import app\n"
                    "def f():\n    from planopt.report import plots\n    import planopt.api\n")
    known = {"planopt.cli": None, "planopt.cli.app": None, "planopt.report.plots": None, "planopt.api": None,
             "planopt.report": None}
    assert imports("planopt.studies.probe", path, known) == {"planopt.report", "planopt.report.plots", "planopt.api"}
    assert upward_imports({"planopt.studies.probe": {"planopt.report.plots"}, "planopt.report.plots": set()}) == \
        {("planopt.studies.probe", "planopt.report.plots")}
    assert strongly_connected({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [{"a", "b"}]


def test_the_product_code_passes_the_lint():
    """``ruff check models solver`` (pyflakes, complexity at most 15, a docstring on every public class, method and
    function: ``[tool.ruff]`` in pyproject.toml) finds nothing."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([ruff, "check", "models", "solver", "--output-format", "concise"], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_benchmark_script_compiles():
    """The scripts of ``benchmarks/`` are not run by the suite (they take minutes), but each must at least parse:
    an edit that breaks one is caught here, not when its figures are next re-measured."""
    root = Path(__file__).resolve().parents[1]
    scripts = sorted((root / "benchmarks").glob("*.py"))
    assert scripts
    for script in scripts:
        compile(script.read_text(), str(script), "exec")
