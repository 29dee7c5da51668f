"""Risk, chance-constrained plans, fitting to pilots and calibration against published runs."""
