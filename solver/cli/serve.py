"""``planopt serve``: the HTTP API and the page (``planopt.service``) on uvicorn."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from planopt.cli.guard import guarded

commands = typer.Typer()


@commands.command()
@guarded
def serve(host: str = typer.Option("127.0.0.1", "--host", help="address to listen on (loopback by default)"),
          port: int = typer.Option(8000, "--port", help="TCP port"),
          token_file: Optional[Path] = typer.Option(None, "--token-file", help="file of bearer tokens: one `TOKEN NAME ROLE` per line "
                                                    "(ROLE admin or user), or one bare token (one admin); else $PLANOPT_TOKEN, "
                                                    "else a random token printed once on stderr"),
          db: Optional[str] = typer.Option(None, "--db", help="SQLAlchemy URL of the job store (default sqlite:///planopt-jobs.sqlite)"),
          scheduler: Optional[str] = typer.Option(None, "--scheduler", help="address of a running Dask scheduler for jobs and "
                                                  "requests (default: a local cluster of this machine's cores)"),
          allow_dir: Optional[Path] = typer.Option(None, "--allow-dir", help="folder under which requests may name files "
                                                   "(portfolio jobs by path); none by default"),
          max_jobs: int = typer.Option(8, "--max-jobs-per-client", help="jobs one principal (token name) may have queued or running"),
          workers: Optional[int] = typer.Option(None, "--workers", help="worker processes of the service's local cluster, which runs the synchronous requests (and the jobs, without --scheduler); default: one per core"),
          docs: bool = typer.Option(False, "--docs/--no-docs", help="serve /docs (Swagger UI, whose script the browser loads "
                                    "from a CDN); off by default")):
    """Serve the planning API and the page over HTTP (every endpoint but /api/health needs a bearer token)."""
    from planopt.studies.distributed import check_scheduler
    from planopt.errors import InputError
    from planopt.service.server import serve as run
    from planopt.service.settings import DEFAULT_DB, Settings, check_allow_dir, read_principals
    if not 0 <= port <= 65535:
        raise InputError(f"--port: expected a port from 0 to 65535, got {port}")
    if max_jobs < 1:
        raise InputError(f"--max-jobs-per-client: expected at least 1, got {max_jobs}")
    if workers is not None and not 1 <= workers <= 1024:
        raise InputError(f"--workers: expected a number of worker processes from 1 to 1,024, got {workers}")
    principals, generated = read_principals(token_file)
    settings = Settings(principals=principals, db_url=db or DEFAULT_DB, scheduler=check_scheduler(scheduler),
                        allow_dir=check_allow_dir(allow_dir), max_jobs_per_client=max_jobs, workers=workers, docs=docs)
    if generated:
        typer.echo(f"planopt serve: bearer token (printed once): {generated}", err=True)
    typer.echo(f"planopt serve: http://{host}:{port}/ (API under /api/, contract at /openapi.json)", err=True)
    run(settings, host, port)
