"""CLI commands for the frontier feature (registered on `planopt.cli.app`)."""
