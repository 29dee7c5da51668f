"""A lean CLI (issue 13 items 15-16): --version, and no solver or pandas import for commands that need none."""

import subprocess
import sys
from importlib.metadata import version

from typer.testing import CliRunner

import planopt
from planopt.cli import app


def test_version_flag_and_attribute_agree_with_the_installed_distribution():
    res = CliRunner().invoke(app, ["--version"])
    assert res.exit_code == 0
    assert res.stdout.strip() == f"planopt {version('planopt')}" == f"planopt {planopt.__version__}"


def heavy_modules_after(code: str) -> set[str]:
    probe = code + "\nimport sys\nprint(' '.join(m for m in ('pyomo', 'pandas', 'highspy', 'matplotlib') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    return set(out.split())


def test_importing_the_package_and_the_cli_loads_no_solver():
    assert heavy_modules_after("import planopt") == set()
    assert heavy_modules_after("import planopt.cli") == set()


def test_help_and_schema_need_no_solver():
    code = ("from typer.testing import CliRunner\nfrom planopt.cli import app\n"
            "assert CliRunner().invoke(app, ['--help']).exit_code == 0\n"
            "assert CliRunner().invoke(app, ['schema']).exit_code == 0")
    assert heavy_modules_after(code) == set()


def test_schema_and_validate_load_no_rich(tmp_path):
    """Issue 13 item 17: rich draws tables and bars, imported only where one is drawn: the commands that
    print none (schema, validate) never load it; `solve --json` neither (tests/solver/cli/test_lean_cli.py)."""
    from tests.support.common import INSTANCES
    for args in (["schema"], ["validate", str(INSTANCES / "qwen3-8b-math.json")]):
        probe = ("import sys\nfrom planopt.cli import main\n"
                 f"sys.argv = ['planopt', *{args!r}]\n"
                 "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
                 "print(' '.join(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.'))), file=sys.stderr)")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
        assert out.stderr.split() == [], (args, out.stderr)


def test_a_text_solve_loads_rich_for_its_tables_but_not_its_progress_bars():
    from tests.support.common import INSTANCES
    probe = ("import sys\nfrom planopt.cli import main\n"
             f"sys.argv = ['planopt', 'solve', {str(INSTANCES / 'tiny.json')!r}, '--no-sensitivity']\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(' '.join(m for m in ('rich.table', 'rich.progress', 'rich.live') if m in sys.modules), file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stderr.split() == ["rich.table"], out.stderr


def test_api_names_resolve_to_functions_even_after_their_modules_load():
    import planopt.studies.frontier  # noqa: F401  (binds the submodule on its package, not on planopt)
    import planopt.studies.sweep  # noqa: F401
    import planopt.uncertainty.risk  # noqa: F401
    assert callable(planopt.frontier) and callable(planopt.sweep) and callable(planopt.risk)
    assert planopt.frontier.__name__ == "frontier_frame"


def test_confidence_sweep_and_probability_frontier_are_in_the_api():
    assert callable(planopt.confidence_sweep) and callable(planopt.probability_frontier)
    assert "confidence_sweep" in dir(planopt)


def test_cli_is_a_package_whose_command_modules_never_import_the_app():
    """Issue 13 (layout): command modules register on their own `commands`; only `app.py` collects them."""
    import ast
    from pathlib import Path

    import planopt.cli

    package = Path(planopt.cli.__file__).parent
    modules = {p.stem: ast.parse(p.read_text()) for p in package.glob("*.py")}
    assert {"app", "solve", "check", "frontier", "calibrate", "fit", "portfolio", "uncertainty",
            "risk_options", "options", "output", "guard"} <= set(modules)
    for name, tree in modules.items():
        if name in ("__init__", "__main__", "app"):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                imported = {node.module or ""} | {f"{node.module or ''}.{a.name}" for a in node.names}
                assert not any(m in ("app", "cli", "cli.app", ".app") or m.endswith("cli.app") for m in imported), \
                    f"planopt.cli.{name} imports the app back"
    registered = {c.callback.__name__ for c in planopt.cli.app.registered_commands}
    for group in planopt.cli.app.registered_groups:
        registered |= {c.callback.__name__ for c in group.typer_instance.registered_commands}
    assert {"solve", "evaluate", "enumerate", "validate", "schema", "frontier", "sweep", "calibrate", "fit",
            "uncertainty", "generate_portfolio"} <= registered
