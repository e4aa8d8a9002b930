"""The batch jobs of a study in its store: one row per submitted job (a round of one server class), with its
Slurm id, its directory and how it ended. `run` reads them to adopt jobs still queued instead of submitting
their rounds again; `status` shows them."""

from __future__ import annotations

from dataclasses import dataclass

from dbsweep.results.store import Store, now

SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_jobs (
    token TEXT PRIMARY KEY,
    study TEXT NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    class TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    job_id TEXT NOT NULL,
    dir TEXT NOT NULL,
    state TEXT NOT NULL,
    submitted_at TEXT NOT NULL,
    ended_at TEXT,
    note TEXT
)
"""
# A job's state in dbsweep's own words: submitted (queued or running, as far as dbsweep knows), merged (its
# round's cells are in the store), failed (it ended without finishing its round: the round stays pending),
# cancelled (by dbsweep, on Ctrl-C).
STATES = ("submitted", "merged", "failed", "cancelled")


@dataclass(frozen=True)
class Job:
    token: str
    study: str
    run_id: int
    cls: str
    repetition: int
    job_id: str
    dir: str
    state: str
    submitted_at: str
    ended_at: str | None
    note: str | None


def _ensure(store: Store) -> None:
    if not store.read_only:
        store.db.execute(SCHEMA)


def add(store: Store, job: Job) -> None:
    _ensure(store)
    with store.tx() as db:
        db.execute(
            "INSERT INTO batch_jobs VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                job.token,
                job.study,
                job.run_id,
                job.cls,
                job.repetition,
                job.job_id,
                job.dir,
                job.state,
                job.submitted_at,
                job.ended_at,
                job.note,
            ),
        )


def ended(store: Store, token: str, state: str, note: str | None = None) -> None:
    assert state in STATES
    _ensure(store)
    with store.tx() as db:
        db.execute(
            "UPDATE batch_jobs SET state = ?, ended_at = ?, note = ? WHERE token = ?", (state, now(), note, token)
        )


def of_study(store: Store, study: str) -> list[Job]:
    """The jobs of the study `study` (a class's name, TITLE.CLASS, or the study's title for all its classes)."""
    exists = store.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'batch_jobs'").fetchone()
    if not exists:
        return []
    rows = store.db.execute(
        "SELECT * FROM batch_jobs WHERE study = ? OR study LIKE ? ESCAPE '\\' ORDER BY submitted_at, token",
        (study, study.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ".%"),
    ).fetchall()
    out = []
    for r in rows:
        token, study_name, run_id, cls, rep, job_id, where, state, submitted, ended_at, note = r
        out.append(Job(token, study_name, int(run_id), cls, int(rep), job_id, where, state, submitted, ended_at, note))
    return out
