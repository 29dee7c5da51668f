"""Brute-force oracles: every plan of a space, scored by the evaluator (the MIP is held to them)."""
