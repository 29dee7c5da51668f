import gc

import pytest

# The shared helpers live in tests/support/; they stay importable from here too (``tests.conftest``).
from tests.support.common import INSTANCES, ROOT, refused, split_seeds  # noqa: F401


@pytest.fixture(autouse=True)
def _heap_collectable_again():
    """``main()`` freezes the heap just before the process exits (``cli/app.py``: a fast exit); a
    test that calls it in-process goes on living, so its objects are made collectable again."""
    yield
    if gc.get_freeze_count():
        gc.unfreeze()
