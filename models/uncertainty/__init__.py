"""The uncertainty model: which defaults are uncertain, the scenarios drawn from it, and the
evaluator vectorised over them."""
