"""What an operator chooses when starting the service (``planopt serve``'s options)."""

from __future__ import annotations

import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from planopt.errors import InputError

TOKEN_ENV = "PLANOPT_TOKEN"
# The largest request body: the biggest shipped portfolio is about 10 kB, so 1 MB is room for any
# real instance while a client cannot make the service parse (and hold) hundreds of megabytes.
MAX_BODY_BYTES = 1_000_000
# Jobs one principal (the name its token speaks for) may have queued or running at once; beyond it, 429.
MAX_JOBS_PER_CLIENT = 8
DEFAULT_DB = "sqlite:///planopt-jobs.sqlite"


ROLES = ("admin", "user")
# A principal's name: what owns its jobs and what the log and the job list show.
PRINCIPAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
MIN_TOKEN_CHARS = 16
# The name of the one principal of the single-token modes (a bare token in the file, $PLANOPT_TOKEN, a printed token).
SINGLE_PRINCIPAL = "admin"


@dataclass(frozen=True)
class Principal:
    """Who a bearer token speaks for: jobs belong to ``name``; ``admin`` sees and cancels every job,
    ``user`` only its own."""
    name: str
    role: str = "user"

    @property
    def admin(self) -> bool:
        """Whether the principal is an admin (sees and cancels every job)."""
        return self.role == "admin"


@dataclass
class Settings:
    """How the service runs: its principals, job database, cluster, allowed folder, body and job caps, workers and
    /docs."""

    principals: dict[str, Principal]    # bearer token -> whom it speaks for
    db_url: str = DEFAULT_DB
    scheduler: Optional[str] = None
    allow_dir: Optional[Path] = None
    max_body_bytes: int = MAX_BODY_BYTES
    max_jobs_per_client: int = MAX_JOBS_PER_CLIENT   # per principal (its token's name), never per address
    workers: Optional[int] = None       # LocalCluster worker processes (default: one per core)
    docs: bool = False                  # /docs (Swagger UI, whose script comes from a CDN): off unless --docs


def read_principals(token_file: Optional[Path]) -> tuple[dict[str, Principal], Optional[str]]:
    """The tokens and whom each speaks for, from ``token_file``, else ``$PLANOPT_TOKEN``, else a fresh random token.
    Returns (token -> principal, the token generated or None).

    The file holds one ``TOKEN NAME ROLE`` per line (``ROLE`` is ``admin`` or ``user``; blank lines and
    lines starting with ``#`` are skipped), or, as before principals existed, one bare token: that
    token is the one principal ``admin``, role admin, as is ``$PLANOPT_TOKEN`` and a generated token."""
    if token_file is None:
        if os.environ.get(TOKEN_ENV, "").strip():
            return {os.environ[TOKEN_ENV].strip(): Principal(SINGLE_PRINCIPAL, "admin")}, None
        token = secrets.token_urlsafe(32)
        return {token: Principal(SINGLE_PRINCIPAL, "admin")}, token
    try:
        text = token_file.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--token-file: cannot read {token_file} ({getattr(exc, 'strerror', None) or exc})") from None
    lines = [(n, line.split()) for n, line in enumerate(text.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"--token-file: {token_file} holds no token")
    if len(lines) == 1 and len(lines[0][1]) == 1:   # today's single-token file
        token = lines[0][1][0]
        _check_token(token, token_file, lines[0][0])
        return {token: Principal(SINGLE_PRINCIPAL, "admin")}, None
    out: dict[str, Principal] = {}
    roles: dict[str, str] = {}
    for n, fields in lines:
        where = f"--token-file: {token_file} line {n}"
        if len(fields) != 3:
            raise InputError(f"{where}: expected TOKEN NAME ROLE (3 fields separated by spaces), got {len(fields)} field(s)")
        token, name, role = fields
        _check_token(token, token_file, n)
        if not PRINCIPAL_NAME.match(name):
            raise InputError(f"{where}: name: expected letters, digits, '.', '_', '@' or '-' (at most 64), got {name!r}")
        if role not in ROLES:
            raise InputError(f"{where}: role: expected one of {', '.join(ROLES)}, got {role!r}")
        if token in out:
            raise InputError(f"{where}: token: the same token is given twice (each token speaks for one principal)")
        if roles.setdefault(name, role) != role:
            raise InputError(f"{where}: role: {name!r} is given both {roles[name]!r} and {role!r}")
        out[token] = Principal(name, role)
    return out, None


def _check_token(token: str, token_file: Path, line: int) -> None:
    if len(token) < MIN_TOKEN_CHARS:
        raise InputError(f"--token-file: {token_file} line {line}: token: {len(token)} characters; expected at least {MIN_TOKEN_CHARS}")


def check_allow_dir(path: Optional[Path]) -> Optional[Path]:
    """The --allow-dir folder, resolved (None when not given); InputError if it is not a directory."""
    if path is None:
        return None
    if not path.is_dir():
        raise InputError(f"--allow-dir: {path} is not a directory")
    return path.resolve()
