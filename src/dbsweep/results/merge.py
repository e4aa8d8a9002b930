"""Merging a job's store into the study's store: the cells one batch job (one round of one server class) measured
on its node, with everything they recorded, in one transaction and once.

A job writes a store of its own (one run of one study); the merge maps its run onto a run of the main store, its
targets by name, its builds and provenance records by their keys, and copies each cell with the rows that hang
off it (results, per-second samples, histograms, measures, per-operation costs, server statistics), and the
run's canaries, instruction counts and profiles. The job's token goes into `merges` in the same transaction: a
job merged twice (a requeued job, a merge retried after a crash) adds nothing the second time. A done cell the
main store already has is not copied again (the store keeps one finished result per cell).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from dbsweep.results.store import SCHEMA_VERSION, Store, StoreError, now

MERGES = """
CREATE TABLE IF NOT EXISTS merges (
    token TEXT PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    source TEXT NOT NULL,
    cells INTEGER NOT NULL,
    merged_at TEXT NOT NULL
)
"""
# The tables whose rows hang off one cell (their `cell_id`), copied with it.
CELL_TABLES = (
    "step_results",
    "samples",
    "histograms",
    "rate_samples",
    "measures",
    "per_op",
    "host_samples",
    "server_stats",
)
# The tables of one run's per-target figures, keyed by (run, target, step): a figure the main store has stays.
TARGET_TABLES = ("instructions", "profiles")


@dataclass(frozen=True)
class Merged:
    cells: int  # cells copied (done or failed)
    skipped: int  # done cells the main store already had
    again: bool  # the token was merged before: nothing was copied


def _columns(db: sqlite3.Connection, schema: str, table: str) -> list[str]:
    return [str(r[1]) for r in db.execute(f'PRAGMA {schema}.table_info("{table}")')]


def _has(db: sqlite3.Connection, schema: str, table: str) -> bool:
    q = f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?"
    return db.execute(q, (table,)).fetchone() is not None


def merge(store: Store, job_db: Path, run_id: int, token: str) -> Merged:
    """Copies the one run of the job's store `job_db` into run `run_id` of `store`, once per `token`."""
    db = store.db
    db.execute(MERGES)
    if db.execute("SELECT 1 FROM merges WHERE token = ?", (token,)).fetchone():
        return Merged(0, 0, again=True)
    if not job_db.is_file():
        raise StoreError(f"{job_db}: the job's store is missing; its round stays pending.")
    db.execute("ATTACH DATABASE ? AS j", (str(job_db),))
    try:
        version = db.execute("SELECT value FROM j.meta WHERE key = 'schema_version'").fetchone()
        if version is None or str(version[0]) != str(SCHEMA_VERSION):
            raise StoreError(
                f"{job_db}: the job's store has schema {version[0] if version else 'none'}, this dbsweep "
                f"{SCHEMA_VERSION}: merge it with the dbsweep that ran the job."
            )
        runs = db.execute("SELECT id FROM j.runs").fetchall()
        if len(runs) != 1:
            raise StoreError(f"{job_db}: a job's store holds one run, this one {len(runs)}.")
        with store.tx():
            return _copy(db, int(runs[0][0]), run_id, token, job_db)
    finally:
        db.execute("DETACH DATABASE j")


def _copy(db: sqlite3.Connection, job_run: int, run_id: int, token: str, job_db: Path) -> Merged:
    targets = _targets(db, job_run, run_id)
    builds = _by_key(db, "builds", "key")
    provenance = _by_key(db, "provenance", "sha256")
    done = {
        (int(t), str(s), int(c), int(r))
        for t, s, c, r in db.execute(
            "SELECT target_id, step, clients, repetition FROM main.cells WHERE run_id = ? AND status = 'done'",
            (run_id,),
        )
    }
    db.execute("CREATE TEMP TABLE IF NOT EXISTS cellmap (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")
    db.execute("DELETE FROM temp.cellmap")
    copied = skipped = 0
    rows = db.execute(
        "SELECT id, target_id, step, clients, repetition, status, started_at, finished_at, error, build_id, "
        "provenance_id FROM j.cells WHERE run_id = ? ORDER BY id",
        (job_run,),
    ).fetchall()
    for old, target, step, clients, rep, status, started, finished, error, build, prov in rows:
        tid = targets[int(target)]
        if status == "done" and (tid, step, int(clients), int(rep)) in done:
            skipped += 1
            continue
        cur = db.execute(
            "INSERT INTO main.cells (run_id, target_id, step, clients, repetition, status, started_at, finished_at, "
            "error, build_id, provenance_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                run_id,
                tid,
                step,
                clients,
                rep,
                status,
                started,
                finished,
                error,
                builds.get(build) if build is not None else None,
                provenance.get(prov) if prov is not None else None,
            ),
        )
        db.execute("INSERT INTO temp.cellmap VALUES (?, ?)", (old, cur.lastrowid))
        copied += 1
    for table in CELL_TABLES:
        if not _has(db, "j", table):
            continue
        cols = [c for c in _columns(db, "main", table) if c != "cell_id"]
        select = ", ".join(f'x."{c}"' for c in cols)
        names = ", ".join(f'"{c}"' for c in cols)
        db.execute(
            f'INSERT INTO main."{table}" (cell_id, {names}) '
            f'SELECT m.new, {select} FROM j."{table}" x JOIN temp.cellmap m ON m.old = x.cell_id'
        )
    for table in TARGET_TABLES:
        if not _has(db, "j", table):
            continue
        cols = [c for c in _columns(db, "main", table) if c not in ("run_id", "target_id")]
        for row in db.execute(f'SELECT target_id, {", ".join(cols)} FROM j."{table}" WHERE run_id = ?', (job_run,)):
            values = (run_id, targets[int(row[0])], *row[1:])
            marks = ", ".join("?" for _ in values)
            db.execute(
                f'INSERT OR IGNORE INTO main."{table}" (run_id, target_id, {", ".join(cols)}) VALUES ({marks})', values
            )
    if _has(db, "j", "canaries"):
        db.execute(
            "INSERT INTO main.canaries (run_id, repetition, measured_at, iterations, seconds, cpu_seconds) "
            "SELECT ?, repetition, measured_at, iterations, seconds, cpu_seconds FROM j.canaries WHERE run_id = ?",
            (run_id, job_run),
        )
    db.execute(
        "INSERT INTO merges (token, run_id, source, cells, merged_at) VALUES (?, ?, ?, ?, ?)",
        (token, run_id, str(job_db), copied, now()),
    )
    return Merged(copied, skipped, again=False)


def _targets(db: sqlite3.Connection, job_run: int, run_id: int) -> dict[int, int]:
    """The job's target ids -> the main run's, made there when the main run has none of that name yet. A
    target whose spec differs is refused: the job measured something else under the same name."""
    out: dict[int, int] = {}
    for jid, name, engine, source, variant, config, spec in db.execute(
        "SELECT id, name, engine, source, variant, config, spec FROM j.targets WHERE run_id = ?", (job_run,)
    ).fetchall():
        row = db.execute("SELECT id, spec FROM main.targets WHERE run_id = ? AND name = ?", (run_id, name)).fetchone()
        if row is not None:
            if json.loads(row[1]) != json.loads(spec):
                raise StoreError(f"target {name!r} of the job differs from run {run_id}'s: its results are not merged.")
            out[int(jid)] = int(row[0])
            continue
        cur = db.execute(
            "INSERT INTO main.targets (run_id, name, engine, source, variant, config, spec) VALUES (?,?,?,?,?,?,?)",
            (run_id, name, engine, source, variant, config, spec),
        )
        out[int(jid)] = int(cur.lastrowid or 0)
    return out


def _by_key(db: sqlite3.Connection, table: str, key: str) -> dict[int, int]:
    """A table of rows unique by `key` (builds, provenance): the job's ids -> the main store's, rows added there
    when missing."""
    cols = [c for c in _columns(db, "main", table) if c != "id"]
    names = ", ".join(f'"{c}"' for c in cols)
    db.execute(f'INSERT OR IGNORE INTO main."{table}" ({names}) SELECT {names} FROM j."{table}"')
    rows = db.execute(f'SELECT x.id, m.id FROM j."{table}" x JOIN main."{table}" m ON m."{key}" = x."{key}"')
    return {int(a): int(b) for a, b in rows}
