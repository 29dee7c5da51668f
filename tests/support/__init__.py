"""What the tests share: random instance generators, the oracle checks, the portfolio brute force, the
fuzzer, the real-server harness and the common paths and seed split (``common``). Imported as
``tests.support.NAME``; ``pyproject.toml`` puts the repository root on pytest's path."""
