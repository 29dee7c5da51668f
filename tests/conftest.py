import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INSTANCES = ROOT / "instances"
sys.path.insert(0, str(Path(__file__).resolve().parent))


def split_seeds(seeds, default: int) -> list:
    """Random-instance seeds for ``pytest.mark.parametrize``: the first ``default`` run in the default
    ``pytest -q``, the rest are marked ``slow`` (``.ci/run`` runs them with ``-m slow``), so the default run
    stays well under 10 minutes on 2 cores while CI still holds every seed to its oracle."""
    import pytest
    seeds = list(seeds)
    return seeds[:default] + [pytest.param(s, marks=pytest.mark.slow) for s in seeds[default:]]
