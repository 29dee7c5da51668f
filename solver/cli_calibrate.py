"""CLI commands for the calibrate feature (registered on `planopt.cli.app`)."""
