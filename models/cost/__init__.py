"""The cost model: the evaluator (every metric of a plan, from the formulas) and its physics."""
