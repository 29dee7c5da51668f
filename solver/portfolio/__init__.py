"""Portfolios and procurement: many jobs sharing reserved, on-demand and spot GPUs."""
