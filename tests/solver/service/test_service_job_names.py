"""Recent jobs are named by what they plan: the instance's (or portfolio's) ``name``, else the file they were given
by; a store made before jobs had names gains the column and keeps its old jobs, unnamed."""

import sqlite3

from planopt.service.routes_jobs import job_name
from planopt.service.store import NAME_CHARS, JobStore, public


def test_a_job_is_named_by_its_instances_name_else_the_file_it_was_given_by():
    assert job_name({"instance": {"name": "x"}}, {"name": "  math job  "}) == "math job"
    assert job_name({"instance": "tiny"}, {"name": "tiny-math-qwen3-1.7b"}) == "tiny-math-qwen3-1.7b"
    assert job_name({"instance": "jobs/legal-sft.json"}, {}) == "legal-sft.json"
    assert job_name({"path": "team\\portfolios\\q3.json"}, {"name": ""}) == "q3.json"
    assert job_name({"instance": {"student": {}}}, {"student": {}}) is None


def test_a_store_from_before_names_gains_the_column_and_names_new_jobs(tmp_path):
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as db:  # the table as the store made it before jobs had names
        db.execute("CREATE TABLE jobs (id VARCHAR(32) PRIMARY KEY, kind VARCHAR(16) NOT NULL, client VARCHAR(64) NOT NULL, "
                   "status VARCHAR(16) NOT NULL, request TEXT NOT NULL, progress TEXT, result TEXT, error TEXT, "
                   "submitted_at FLOAT NOT NULL, started_at FLOAT, finished_at FLOAT)")
        db.execute("INSERT INTO jobs VALUES ('a' , 'solve', 'me', 'done', '{}', NULL, '{}', NULL, 1.0, 1.0, 2.0)")
    store = JobStore(f"sqlite:///{path}")
    try:
        new = store.add("solve", "me", {"instance": {}, "options": {}}, "x" * (NAME_CHARS + 50))
        listed = {j["id"]: public(j) for j in store.list("me")}
        assert listed["a"]["name"] is None and listed["a"]["status"] == "done"
        assert listed[new]["name"] == "x" * NAME_CHARS
        assert public(store.get(new))["name"] == "x" * NAME_CHARS
    finally:
        store.close()
    reopened = JobStore(f"sqlite:///{path}")  # opening it again adds nothing twice
    try:
        assert len(reopened.list("me")) == 2
    finally:
        reopened.close()
