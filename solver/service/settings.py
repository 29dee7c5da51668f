"""What an operator chooses when starting the service (``planopt serve``'s options)."""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from planopt.errors import InputError

TOKEN_ENV = "PLANOPT_TOKEN"
# The largest request body: the biggest shipped portfolio is about 10 kB, so 1 MB is room for any
# real instance while a client cannot make the service parse (and hold) hundreds of megabytes.
MAX_BODY_BYTES = 1_000_000
# Jobs one client (one address) may have queued or running at once; beyond it, 429.
MAX_JOBS_PER_CLIENT = 8
DEFAULT_DB = "sqlite:///planopt-jobs.sqlite"


@dataclass
class Settings:
    token: str
    db_url: str = DEFAULT_DB
    scheduler: Optional[str] = None
    allow_dir: Optional[Path] = None
    max_body_bytes: int = MAX_BODY_BYTES
    max_jobs_per_client: int = MAX_JOBS_PER_CLIENT
    workers: Optional[int] = None       # LocalCluster worker processes (default: one per core)


def read_token(token_file: Optional[Path]) -> tuple[str, bool]:
    """The bearer token: from ``token_file``, else ``$PLANOPT_TOKEN``, else a fresh random one.
    Returns (token, generated)."""
    if token_file is not None:
        try:
            token = token_file.read_text().strip()
        except OSError as exc:
            raise InputError(f"--token-file: cannot read {token_file} ({exc.strerror})") from None
        if len(token) < 16:
            raise InputError(f"--token-file: {token_file} holds a token of {len(token)} characters; expected at least 16")
        return token, False
    if os.environ.get(TOKEN_ENV, "").strip():
        return os.environ[TOKEN_ENV].strip(), False
    return secrets.token_urlsafe(32), True


def check_allow_dir(path: Optional[Path]) -> Optional[Path]:
    if path is None:
        return None
    if not path.is_dir():
        raise InputError(f"--allow-dir: {path} is not a directory")
    return path.resolve()
