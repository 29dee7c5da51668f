"""The job store: every job's request, status, progress, result and timings, in SQL.

SQLite in a file by default; any SQLAlchemy URL with ``--db`` (e.g.
``postgresql://...``). The store is the service's memory: a result outlives the
process that computed it, and a job that was queued or running when the
service stopped is marked ``interrupted`` when the next one starts (see
:meth:`JobStore.mark_interrupted`), never left looking alive.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any, Optional

from sqlalchemy import Column, Float, MetaData, String, Table, Text, create_engine, func, inspect, select, text, update

ACTIVE = ("queued", "running")
NAME_CHARS = 200  # a job's name is cut to this many characters (a label for the page's list, not a key)
FINISHED = ("done", "failed", "cancelled", "interrupted")

metadata = MetaData()
jobs = Table(
    "jobs", metadata,
    Column("id", String(32), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("client", String(64), nullable=False),  # the owner: the principal's name (a store from before principals: an address)
    Column("status", String(16), nullable=False, index=True),
    Column("name", String(NAME_CHARS)),           # what the job plans: its instance's `name`, or the file it was given by
    Column("request", Text, nullable=False),      # the instance and the options, as JSON
    Column("progress", Text),                     # {"done": k, "total": n} as JSON, while running
    Column("result", Text),                       # the CLI's JSON object, when done
    Column("error", Text),                        # the one-line message, when failed
    Column("submitted_at", Float, nullable=False),
    Column("started_at", Float),
    Column("finished_at", Float),
)


class JobStore:
    """Jobs in a SQL database (thread-safe: the service writes from request and Dask callback threads)."""

    def __init__(self, url: str):
        kwargs = {"connect_args": {"check_same_thread": False}} if url.startswith("sqlite") else {}
        self.engine = create_engine(url, **kwargs)
        metadata.create_all(self.engine)
        self._lock = threading.Lock()  # SQLite allows one writer; keep writes from racing into "database is locked"
        self._add_name_column()

    def _add_name_column(self) -> None:
        """A store made before jobs had names gets the column (its old jobs stay unnamed)."""
        if "name" not in {c["name"] for c in inspect(self.engine).get_columns("jobs")}:
            with self._lock, self.engine.begin() as db:
                db.execute(text(f"ALTER TABLE jobs ADD COLUMN name VARCHAR({NAME_CHARS})"))

    def add(self, kind: str, client: str, request: dict[str, Any], name: Optional[str] = None) -> str:
        """Store a new queued job of ``kind`` for ``client`` with its request (and ``name``, what it plans); its fresh id."""
        job_id = uuid.uuid4().hex
        with self._lock, self.engine.begin() as db:
            db.execute(jobs.insert().values(id=job_id, kind=kind, client=client, status="queued",
                                            name=None if name is None else name[:NAME_CHARS],
                                            request=json.dumps(request, allow_nan=False), submitted_at=time.time()))
        return job_id

    def set(self, job_id: str, only_if_active: bool = True, **values: Any) -> bool:
        """Update a job; a finished job is never changed again (a late callback cannot undo a cancel). True if changed."""
        for key in ("progress", "result"):
            if key in values and values[key] is not None:
                values[key] = json.dumps(values[key], allow_nan=False)
        statement = update(jobs).where(jobs.c.id == job_id)
        if only_if_active:
            statement = statement.where(jobs.c.status.in_(ACTIVE))
        with self._lock, self.engine.begin() as db:
            return db.execute(statement.values(**values)).rowcount > 0

    def get(self, job_id: str) -> Optional[dict[str, Any]]:
        """A job's row, JSON fields decoded, or None for an unknown id."""
        with self.engine.connect() as db:
            row = db.execute(select(jobs).where(jobs.c.id == job_id)).mappings().first()
        return None if row is None else _decode(row)

    def request(self, job_id: str) -> Optional[dict[str, Any]]:
        """The instance and options a job was submitted with, or None for an unknown id."""
        with self.engine.connect() as db:
            text = db.execute(select(jobs.c.request).where(jobs.c.id == job_id)).scalar()
        return None if text is None else json.loads(text)

    def list(self, client: Optional[str] = None, limit: int = 100) -> list[dict[str, Any]]:
        """The newest jobs first (of one client, if given), without their results."""
        cols = [c for c in jobs.c if c.name not in ("request", "result")]
        statement = select(*cols).order_by(jobs.c.submitted_at.desc()).limit(limit)
        if client is not None:
            statement = statement.where(jobs.c.client == client)
        with self.engine.connect() as db:
            return [_decode(r) for r in db.execute(statement).mappings()]

    def active_count(self, client: str) -> int:
        """How many of ``client``'s jobs are queued or running."""
        with self.engine.connect() as db:
            return db.execute(select(func.count()).select_from(jobs)
                              .where(jobs.c.client == client, jobs.c.status.in_(ACTIVE))).scalar()

    def counts(self) -> dict[str, int]:
        """How many jobs are in each status."""
        with self.engine.connect() as db:
            return dict(db.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status)).all())

    def mark_interrupted(self) -> int:
        """At start-up: jobs a previous process left queued or running failed with it; say so. Their number."""
        with self._lock, self.engine.begin() as db:
            return db.execute(update(jobs).where(jobs.c.status.in_(ACTIVE)).values(
                status="interrupted", finished_at=time.time(),
                error="the service stopped before this job finished; submit it again")).rowcount

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()


def _decode(row) -> dict[str, Any]:
    out = dict(row)
    for key in ("progress", "result", "request"):
        if out.get(key) is not None:
            out[key] = json.loads(out[key])
    return out


def public(job: dict[str, Any]) -> dict[str, Any]:
    """A job as ``GET /api/jobs/{id}`` shows it: its owner (the principal that submitted it), timings in seconds."""
    out = {k: job.get(k) for k in ("id", "kind", "name", "status", "progress", "error", "submitted_at", "started_at", "finished_at")}
    out["owner"] = job.get("client")
    if job.get("started_at") and job.get("finished_at"):
        out["run_seconds"] = job["finished_at"] - job["started_at"]
    if "result" in job:
        out["result"] = job["result"]
    return out
