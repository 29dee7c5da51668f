"""Input shapes only: the job, the plan, the portfolio and the calibration case (pydantic and
dataclasses). Imports the catalog's sourced defaults and nothing of the cost model."""
