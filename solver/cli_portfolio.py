"""CLI commands for the portfolio feature (registered on `planopt.cli.app`)."""

from pathlib import Path
from typing import Optional


def solve_portfolio_command(file: Path, json_out: bool, time_limit: Optional[float], plot: Optional[Path]) -> int:
    """Solve a portfolio instance, print it, return the exit code."""
    from .errors import InputError
    raise InputError(f"{file}: portfolio instances are not supported yet")
