"""Many solves of one job: Pareto frontiers, sweeps, and the Dask cluster they run on."""
