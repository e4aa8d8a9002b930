"""The results store: SQLite in the workspace, append-only per cell.

A cell (target x step x clients x repetition) is written in one transaction when
it ends, so a crash at any moment loses only the cell that was running.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dbsweep.errors import DbsweepError
from dbsweep.results.counts import Count
from dbsweep.results.model import CellKey, CellResult, StoredCanary, StoredCell

SCHEMA_VERSION = 2
# Schema 1 named the per-second rates of each operation after the one suite that had them; schema 2 renames
# the table on first write, and a reader of an untouched schema-1 store reads it by its old name.
LEGACY_RATES_TABLE = "ibench_samples"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS studies (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    path TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    study_id INTEGER NOT NULL REFERENCES studies(id),
    measurement_key TEXT NOT NULL,
    study_toml TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS targets (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    engine TEXT NOT NULL,
    source TEXT NOT NULL,
    variant TEXT NOT NULL,
    config TEXT NOT NULL,
    spec TEXT NOT NULL,
    UNIQUE (run_id, name)
);
CREATE TABLE IF NOT EXISTS builds (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    engine TEXT NOT NULL,
    source TEXT NOT NULL,
    source_identity TEXT NOT NULL,
    variant TEXT NOT NULL,
    version TEXT NOT NULL,
    bindir TEXT NOT NULL,
    cc TEXT NOT NULL,
    cflags TEXT NOT NULL,
    configure TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS provenance (
    id INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS cells (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    step TEXT NOT NULL,
    clients INTEGER NOT NULL,
    repetition INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    error TEXT,
    build_id INTEGER REFERENCES builds(id),
    provenance_id INTEGER REFERENCES provenance(id)
);
CREATE INDEX IF NOT EXISTS cells_key ON cells (run_id, target_id, step, clients, repetition);
-- At most one finished result per cell and run: a retry of a failed cell adds a row, a done cell is never redone.
CREATE UNIQUE INDEX IF NOT EXISTS cells_done_once ON cells (run_id, target_id, step, clients, repetition)
    WHERE status = 'done';
CREATE TABLE IF NOT EXISTS step_results (
    cell_id INTEGER PRIMARY KEY REFERENCES cells(id),
    ops_name TEXT NOT NULL,
    operations INTEGER NOT NULL,
    events INTEGER NOT NULL,
    seconds REAL NOT NULL,
    qps REAL NOT NULL,
    tps REAL NOT NULL,
    errors INTEGER NOT NULL,
    errors_by_kind TEXT NOT NULL,
    lat_p50_us REAL, lat_p95_us REAL, lat_p99_us REAL, lat_max_us REAL, lat_mean_us REAL,
    client_cpu_s REAL,
    summary TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS samples (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t INTEGER NOT NULL,
    phase TEXT NOT NULL,
    ops INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (cell_id, t)
);
CREATE TABLE IF NOT EXISTS histograms (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    kind TEXT NOT NULL,
    unit TEXT NOT NULL,
    encoding TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (cell_id, kind)
);
-- Per-second rates and worst response times of each operation, for steps that run several at once.
CREATE TABLE IF NOT EXISTS rate_samples (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t INTEGER NOT NULL,
    ips REAL NOT NULL,
    dps REAL NOT NULL,
    qps REAL NOT NULL,
    max_insert_us INTEGER,
    max_delete_us INTEGER,
    max_query_us INTEGER,
    PRIMARY KEY (cell_id, t)
);
-- What the samplers saw over the measured part of a step (host, device, server, client), as JSON.
CREATE TABLE IF NOT EXISTS measures (
    cell_id INTEGER PRIMARY KEY REFERENCES cells(id),
    data TEXT NOT NULL
);
-- Hardware cost per operation (cpu/o, cs/o, r/o, rKB/o, wKB/o, ...): one row per metric.
CREATE TABLE IF NOT EXISTS per_op (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    metric TEXT NOT NULL,
    value REAL,
    PRIMARY KEY (cell_id, metric)
);
-- One sampler record per second of the step, as JSON.
CREATE TABLE IF NOT EXISTS host_samples (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    t REAL NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (cell_id, t)
);
-- Instructions per operation of the serving backend under valgrind, per target and step (deterministic,
-- so measured once per run); read back as one typed record (results/counts.py). Older stores also copied the
-- per-query figure into per_op as instructions/o: the reports no longer read it.
CREATE TABLE IF NOT EXISTS instructions (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    step TEXT NOT NULL,
    per_event REAL,
    per_query REAL,
    spread REAL,
    error TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, target_id, step)
);
-- The server's own statistics after the step (its statistics views or counters), one row per view.
CREATE TABLE IF NOT EXISTS server_stats (
    cell_id INTEGER NOT NULL REFERENCES cells(id),
    view TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (cell_id, view)
);
-- The canary timed before each round (repetition) of a run: a fixed amount of CPU work and how long it took.
-- A round resumed later is timed again, so a round may have several rows. Older stores lack the table: the
-- first writer creates it, a reader finds none.
CREATE TABLE IF NOT EXISTS canaries (
    id INTEGER PRIMARY KEY,
    run_id INTEGER NOT NULL REFERENCES runs(id),
    repetition INTEGER NOT NULL,
    measured_at TEXT NOT NULL,
    iterations INTEGER NOT NULL,
    seconds REAL NOT NULL,
    cpu_seconds REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS canaries_run ON canaries (run_id, repetition);
-- A sampled profile of the server per target and step (measure.profile): folded stacks as text, and perf's
-- counts per event. Older stores lack the table: the first writer creates it, a reader finds none.
CREATE TABLE IF NOT EXISTS profiles (
    run_id INTEGER NOT NULL REFERENCES runs(id),
    target_id INTEGER NOT NULL REFERENCES targets(id),
    step TEXT NOT NULL,
    error TEXT,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, target_id, step)
);
"""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


# What the store's database raises; the CLI turns it into a plain sentence with `explain`.
DATABASE_ERRORS = (sqlite3.Error,)


class StoreError(DbsweepError):
    """The results store cannot be read or written; the message says what to do."""


# The stores this process opened, newest last: an SQLite error met anywhere names the store it came from.
_opened: list[Path] = []


def explain(e: Exception, path: Path | None = None) -> StoreError:
    """An SQLite error as one or two plain sentences about the store (the newest opened, unless `path`)."""
    where = path or (_opened[-1] if _opened else Path("results.db"))
    msg = str(e)
    low = msg.lower()
    if "disk is full" in low or "disk i/o error" in low:
        return StoreError(
            f"cannot write the results store {where}: {msg}; free some space on its disk and run again "
            "(finished cells are kept)."
        )
    if "readonly" in low or "read-only" in low:
        return StoreError(
            f"the results store {where} is read-only; `run` needs to write it (`report` and `status` read it as it is)."
        )
    if "not a database" in low or "malformed" in low or "corrupt" in low or "no such table" in low:
        return StoreError(
            f"the results store {where} is damaged ({msg}); restore it from a copy, or move it aside "
            f"(mv {where} {where}.damaged) to start afresh."
        )
    if "locked" in low or "busy" in low:
        return StoreError(f"the results store {where} is busy ({msg}); another process holds it, try again.")
    return StoreError(f"the results store {where}: {msg}")


def is_blank(path: Path) -> bool:
    """Whether the store's file is there but holds nothing at all (0 bytes, no write-ahead log): SQLite reads it
    as an empty database, so `run` starts on it and `status` and `report` see no results, not a damaged store."""
    wal = path.with_name(path.name + "-wal")
    try:
        return path.stat().st_size == 0 and (not wal.exists() or wal.stat().st_size == 0)
    except OSError:
        return False


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes: not the data, not a journal, not a WAL index. An archived store on
    a read-only medium has no writable place for the WAL index, so it is then opened as immutable."""
    uri = path.resolve().as_uri()
    try:
        db = sqlite3.connect(f"{uri}?mode=ro", uri=True, isolation_level=None)
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as e:
        if "unable to open" not in str(e) and "readonly" not in str(e):
            raise
    return sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None)


class Store:
    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        _opened.append(path)
        try:
            if read_only:
                self.db = _read_only(path)
                self._check()
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
            self.db.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed cell survives a power cut, not only a killed process.
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.execute("PRAGMA foreign_keys=ON")
            if self._has_table(LEGACY_RATES_TABLE):
                self.db.execute(f"ALTER TABLE {LEGACY_RATES_TABLE} RENAME TO rate_samples")
            self.db.executescript(
                f"BEGIN; {SCHEMA}; INSERT OR IGNORE INTO meta VALUES ('schema_version', '{SCHEMA_VERSION}'); COMMIT;"
            )
            self._check()
        except sqlite3.Error as e:
            raise explain(e, path) from None

    def _has_table(self, name: str) -> bool:
        query = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return bool(self.db.execute(query, (name,)).fetchone())

    @property
    def _rates_table(self) -> str:
        return "rate_samples" if self._has_table("rate_samples") else LEGACY_RATES_TABLE

    def _check(self) -> None:
        """Reads every table's root and the meta row: a file that is not a store, or a truncated one, fails
        here with a plain message rather than halfway through a report."""
        self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        for (table,) in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            self.db.execute(f'SELECT count(*) FROM "{table}"').fetchone()

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ---- studies, runs, targets -------------------------------------------------

    def study_id(self, name: str, path: str) -> int:
        with self.tx() as db:
            db.execute("INSERT OR IGNORE INTO studies (name, path, created_at) VALUES (?, ?, ?)", (name, path, now()))
            row = db.execute("SELECT id FROM studies WHERE name = ?", (name,)).fetchone()
        return int(row[0])

    def latest_run(self, study_name: str) -> tuple[int, str] | None:
        row = self.db.execute(
            "SELECT r.id, r.measurement_key FROM runs r JOIN studies s ON s.id = r.study_id "
            "WHERE s.name = ? ORDER BY r.id DESC LIMIT 1",
            (study_name,),
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def new_run(self, study_id: int, measurement_key: str, toml_text: str) -> int:
        with self.tx() as db:
            cur = db.execute(
                "INSERT INTO runs (study_id, measurement_key, study_toml, created_at) VALUES (?, ?, ?, ?)",
                (study_id, measurement_key, toml_text, now()),
            )
        return int(cur.lastrowid or 0)

    def ensure_target(self, run_id: int, name: str, engine: str, spec: dict[str, Any]) -> int:
        spec_json = json.dumps(spec, sort_keys=True)
        with self.tx() as db:
            row = db.execute("SELECT id, spec FROM targets WHERE run_id = ? AND name = ?", (run_id, name)).fetchone()
            if row:
                if row[1] != spec_json:
                    raise ValueError(f"target {name!r} changed since run {run_id} started")
                return int(row[0])
            cur = db.execute(
                "INSERT INTO targets (run_id, name, engine, source, variant, config, spec) VALUES (?,?,?,?,?,?,?)",
                (run_id, name, engine, spec["source"], spec["variant"], spec["config"], spec_json),
            )
        return int(cur.lastrowid or 0)

    def target_ids(self, run_id: int) -> dict[str, int]:
        return {str(n): int(i) for i, n in self.db.execute("SELECT id, name FROM targets WHERE run_id = ?", (run_id,))}

    # ---- cells -------------------------------------------------------------------

    def statuses(self, run_id: int) -> dict[CellKey, tuple[str, str | None]]:
        """The latest status of every stored cell of a run: done wins over any failure."""
        out: dict[CellKey, tuple[str, str | None]] = {}
        rows = self.db.execute(
            "SELECT t.name, c.step, c.clients, c.repetition, c.status, c.error FROM cells c "
            "JOIN targets t ON t.id = c.target_id WHERE c.run_id = ? ORDER BY c.id",
            (run_id,),
        )
        for name, step, clients, rep, status, error in rows:
            key = CellKey(name, step, int(clients), int(rep))
            if out.get(key, ("",))[0] != "done":
                out[key] = (status, error)
        return out

    def _intern_provenance(self, db: sqlite3.Connection, data: dict[str, Any]) -> int:
        blob = json.dumps(data, sort_keys=True, default=str)
        sha = hashlib.sha256(blob.encode()).hexdigest()
        db.execute("INSERT OR IGNORE INTO provenance (sha256, data) VALUES (?, ?)", (sha, blob))
        return int(db.execute("SELECT id FROM provenance WHERE sha256 = ?", (sha,)).fetchone()[0])

    def _build_id(self, db: sqlite3.Connection, b: dict[str, Any]) -> int:
        key = hashlib.sha256(json.dumps(b, sort_keys=True).encode()).hexdigest()[:24]
        db.execute(
            "INSERT OR IGNORE INTO builds (key, engine, source, source_identity, variant, version, bindir, cc, "
            "cflags, configure, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (
                key,
                b.get("engine", ""),
                b.get("source", ""),
                b.get("source_identity", ""),
                b.get("variant", ""),
                b.get("version", ""),
                b.get("bindir", ""),
                b.get("cc", ""),
                b.get("cflags", ""),
                b.get("configure", ""),
                now(),
            ),
        )
        return int(db.execute("SELECT id FROM builds WHERE key = ?", (key,)).fetchone()[0])

    def write_cell(self, run_id: int, target_id: int, r: CellResult) -> int:
        """Writes one finished cell with everything it measured, atomically."""
        with self.tx() as db:
            build_id = self._build_id(db, r.build) if r.build else None
            prov_id = self._intern_provenance(db, r.provenance) if r.provenance else None
            cur = db.execute(
                "INSERT INTO cells (run_id, target_id, step, clients, repetition, status, started_at, finished_at, "
                "error, build_id, provenance_id) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    target_id,
                    r.key.step,
                    r.key.clients,
                    r.key.repetition,
                    r.status,
                    r.started_at,
                    r.finished_at,
                    r.error,
                    build_id,
                    prov_id,
                ),
            )
            cell_id = int(cur.lastrowid or 0)
            s = r.summary
            if r.status == "done" and s is not None:
                lat = s.get("latency_us", {})
                db.execute(
                    "INSERT INTO step_results (cell_id, ops_name, operations, events, seconds, qps, tps, errors, "
                    "errors_by_kind, lat_p50_us, lat_p95_us, lat_p99_us, lat_max_us, lat_mean_us, client_cpu_s, "
                    "summary) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        cell_id,
                        s["ops_name"],
                        s["operations"],
                        s["events"],
                        s["seconds"],
                        s["rate"],
                        s["tps"],
                        s.get("error_count", 0),
                        json.dumps(s.get("errors", {})),
                        lat.get("p50"),
                        lat.get("p95"),
                        lat.get("p99"),
                        lat.get("max"),
                        lat.get("mean"),
                        s.get("client_cpu_user_s", 0.0) + s.get("client_cpu_sys_s", 0.0),
                        json.dumps({k: v for k, v in s.items() if k not in ("histogram", "histograms")}),
                    ),
                )
                if s.get("histogram"):
                    db.execute(
                        "INSERT INTO histograms (cell_id, kind, unit, encoding, data) VALUES (?, 'latency', 'us', "
                        "'hdr-v2-deflate-base64', ?)",
                        (cell_id, s["histogram"]),
                    )
                for kind, data in (r.histograms or {}).items():
                    db.execute(
                        "INSERT INTO histograms (cell_id, kind, unit, encoding, data) VALUES (?, ?, 'us', "
                        "'hdr-v2-deflate-base64', ?)",
                        (cell_id, kind, data),
                    )
                for line in r.seconds_lines or []:
                    db.execute(
                        "INSERT INTO samples (cell_id, t, phase, ops, errors, max_us) VALUES (?,?,?,?,?,?)",
                        (cell_id, line["t"], line["phase"], line["ops"], line["errors"], line["max_us"]),
                    )
                    if "i_ips" in line:  # a step that runs several operations: each one's rate this second
                        db.execute(
                            "INSERT INTO rate_samples (cell_id, t, ips, dps, qps, max_insert_us, max_delete_us, "
                            "max_query_us) VALUES (?,?,?,?,?,?,?,?)",
                            (
                                cell_id,
                                line["t"],
                                line["i_ips"],
                                line["i_dps"],
                                line["i_qps"],
                                line.get("max_i_us"),
                                line.get("max_d_us"),
                                line.get("max_q_us"),
                            ),
                        )
                if r.measures is not None:
                    db.execute("INSERT INTO measures (cell_id, data) VALUES (?, ?)", (cell_id, json.dumps(r.measures)))
                for metric, value in (r.per_op or {}).items():
                    db.execute("INSERT INTO per_op (cell_id, metric, value) VALUES (?,?,?)", (cell_id, metric, value))
                for sample in r.host_samples or []:
                    db.execute(
                        "INSERT OR REPLACE INTO host_samples (cell_id, t, data) VALUES (?,?,?)",
                        (cell_id, sample["t"], json.dumps(sample)),
                    )
                for view, data in (r.server_stats or {}).items():
                    db.execute(
                        "INSERT INTO server_stats (cell_id, view, data) VALUES (?,?,?)",
                        (cell_id, view, json.dumps(data, default=str)),
                    )
        return cell_id

    def write_instructions(
        self, run_id: int, target_id: int, step: str, data: dict[str, Any], error: str | None = None
    ) -> None:
        """One target's instruction count for a step (read back by `counts`). Only here: a per-query copy in
        per_op beside cpu/o was a second figure that could disagree with the verdict's."""
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO instructions (run_id, target_id, step, per_event, per_query, spread, error, "
                "data) VALUES (?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    target_id,
                    step,
                    data.get("per_event"),
                    data.get("per_query"),
                    data.get("spread"),
                    error,
                    json.dumps(data),
                ),
            )

    def write_canary(self, run_id: int, repetition: int, iterations: int, seconds: float, cpu_seconds: float) -> None:
        """The canary timed before a round of a run, as one more row (never replacing an earlier one)."""
        with self.tx() as db:
            db.execute(
                "INSERT INTO canaries (run_id, repetition, measured_at, iterations, seconds, cpu_seconds) "
                "VALUES (?,?,?,?,?,?)",
                (run_id, repetition, now(), iterations, seconds, cpu_seconds),
            )

    def canaries(self, run_id: int) -> list[StoredCanary]:
        """The canaries of a run in the order they were timed; none from a store older than the table."""
        if not self._has_table("canaries"):
            return []
        rows = self.db.execute(
            "SELECT repetition, measured_at, iterations, seconds, cpu_seconds FROM canaries WHERE run_id = ? "
            "ORDER BY id",
            (run_id,),
        ).fetchall()
        return [StoredCanary(int(r), str(at), int(i), float(s), float(c)) for r, at, i, s, c in rows]

    def write_profile(
        self, run_id: int, target_id: int, step: str, data: dict[str, Any], error: str | None = None
    ) -> None:
        """One target's profile of a step (or why there is none)."""
        with self.tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO profiles (run_id, target_id, step, error, data) VALUES (?,?,?,?,?)",
                (run_id, target_id, step, error, json.dumps(data)),
            )

    def profiles(self, run_id: int) -> dict[tuple[str, str], dict[str, Any]]:
        """(target, step) -> the stored profile (`folded` as text) and its `error`; none from an older store."""
        if not self._has_table("profiles"):
            return {}
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for name, step, error, data in self.db.execute(
            "SELECT t.name, p.step, p.error, p.data FROM profiles p JOIN targets t ON t.id = p.target_id "
            "WHERE p.run_id = ?",
            (run_id,),
        ):
            d = json.loads(data) if data else {}
            d["error"] = error
            out[(name, step)] = d
        return out

    def instruction_counts(self, run_id: int) -> dict[tuple[str, str], dict[str, Any]]:
        """(target, step) -> per_event, per_query, spread, error, and the rest of what was stored (`data`)."""
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for name, step, per_event, per_query, spread, error, data in self.db.execute(
            "SELECT t.name, i.step, i.per_event, i.per_query, i.spread, i.error, i.data FROM instructions i "
            "JOIN targets t ON t.id = i.target_id WHERE i.run_id = ?",
            (run_id,),
        ):
            d = json.loads(data) if data else {}
            d.update(per_event=per_event, per_query=per_query, spread=spread, error=error)
            out[(name, step)] = d
        return out

    def builds_measured(self, run_id: int) -> dict[str, list[dict[str, Any]]]:
        """target -> the distinct records of what produced its stored results (the engine part of its done
        cells' provenance, and the `build` of its counts), oldest first: a resumed run checks them against what
        it would measure now."""
        out: dict[str, list[dict[str, Any]]] = {}

        def add(name: str, record: object) -> None:
            if isinstance(record, dict) and record and record not in out.setdefault(name, []):
                out[name].append(record)

        for name, data in self.db.execute(
            "SELECT t.name, p.data FROM cells c JOIN targets t ON t.id = c.target_id "
            "JOIN provenance p ON p.id = c.provenance_id WHERE c.run_id = ? AND c.status = 'done' "
            "GROUP BY t.name, c.provenance_id ORDER BY MIN(c.id)",
            (run_id,),
        ):
            add(str(name), json.loads(data).get("engine"))
        for (name, _step), d in self.instruction_counts(run_id).items():
            if not d.get("error"):
                add(name, d.get("build"))
        return out

    def counts(self, run_id: int) -> dict[tuple[str, str], Count]:
        """(target, step) -> the typed instruction count (`results.counts.Count`) of a run."""
        return {(t, s): Count.from_stored(t, s, d) for (t, s), d in self.instruction_counts(run_id).items()}

    def per_op(self, run_id: int) -> dict[int, dict[str, float | None]]:
        """cell id -> metric -> value, for the done cells of a run."""
        out: dict[int, dict[str, float | None]] = {}
        for cell_id, metric, value in self.db.execute(
            "SELECT p.cell_id, p.metric, p.value FROM per_op p JOIN cells c ON c.id = p.cell_id "
            "WHERE c.run_id = ? AND c.status = 'done'",
            (run_id,),
        ):
            out.setdefault(cell_id, {})[metric] = value
        return out

    def measures(self, run_id: int) -> dict[int, dict[str, Any]]:
        """cell id -> what the samplers saw over the step (host, device, server, client), for the done cells."""
        out: dict[int, dict[str, Any]] = {}
        for cell_id, data in self.db.execute(
            "SELECT m.cell_id, m.data FROM measures m JOIN cells c ON c.id = m.cell_id "
            "WHERE c.run_id = ? AND c.status = 'done'",
            (run_id,),
        ):
            try:
                parsed = json.loads(data)
            except ValueError:  # a damaged record costs its own figures, not the report
                continue
            if isinstance(parsed, dict):
                out[int(cell_id)] = parsed
        return out

    def summaries(self, run_id: int) -> dict[int, dict[str, Any]]:
        """cell id -> the step's full summary, for the done cells of a run."""
        return {
            cell_id: json.loads(summary)
            for cell_id, summary in self.db.execute(
                "SELECT r.cell_id, r.summary FROM step_results r JOIN cells c ON c.id = r.cell_id "
                "WHERE c.run_id = ? AND c.status = 'done'",
                (run_id,),
            )
        }

    def results(self, run_id: int) -> list[StoredCell]:
        """Every done cell of a run with its headline numbers, in the order they were stored."""
        rows = self.db.execute(
            "SELECT t.name, c.step, c.clients, c.repetition, r.qps, r.tps, r.operations, r.seconds, r.errors, "
            "r.lat_p50_us, r.lat_p99_us, r.ops_name, c.id FROM cells c JOIN targets t ON t.id = c.target_id "
            "JOIN step_results r ON r.cell_id = c.id WHERE c.run_id = ? AND c.status = 'done' ORDER BY c.id",
            (run_id,),
        ).fetchall()
        return [StoredCell(*row) for row in rows]

    # ---- what the reports read -------------------------------------------------------------------------

    def seconds(self, run_id: int) -> list[tuple[int, int, str, int, int]]:
        """(cell id, t, phase, ops, max_us) of every per-second line of the done cells of a run."""
        return [
            (int(c), int(t), str(p), int(o), int(m))
            for c, t, p, o, m in self.db.execute(
                "SELECT s.cell_id, s.t, s.phase, s.ops, s.max_us FROM samples s JOIN cells c ON c.id = s.cell_id "
                "WHERE c.run_id = ? AND c.status = 'done' ORDER BY s.cell_id, s.t",
                (run_id,),
            )
        ]

    def second_spreads(self, run_id: int) -> dict[int, tuple[int, float]]:
        """cell id -> (seconds, CV of the operations per second) over each done cell's measured seconds, its last
        second left out (a step that ends on its work, not the clock, ends within a second). None of a cell with
        fewer than three such seconds or no operations."""
        out: dict[int, tuple[int, float]] = {}
        for cell_id, n, total, squares in self.db.execute(
            "SELECT s.cell_id, COUNT(*), SUM(s.ops), SUM(s.ops * s.ops) FROM samples s "
            "JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ? AND c.status = 'done' AND s.phase = 'measure' "
            "AND s.t < (SELECT MAX(m.t) FROM samples m WHERE m.cell_id = s.cell_id AND m.phase = 'measure') "
            "GROUP BY s.cell_id",
            (run_id,),
        ):
            if n < 3 or not total:
                continue
            mean = total / n
            var = max(0.0, (squares - n * mean * mean) / (n - 1))
            out[int(cell_id)] = (int(n), var**0.5 / mean)
        return out

    def rates(self, run_id: int) -> list[tuple[Any, ...]]:
        """(cell id, t, inserts/s, deletes/s, queries/s, worst insert, delete and query µs) of every second of
        the done cells of a run whose steps report several operations."""
        return self.db.execute(
            "SELECT s.cell_id, s.t, s.ips, s.dps, s.qps, s.max_insert_us, s.max_delete_us, s.max_query_us "
            f"FROM {self._rates_table} s JOIN cells c ON c.id = s.cell_id WHERE c.run_id = ? AND c.status = 'done' "
            "ORDER BY s.cell_id, s.t",
            (run_id,),
        ).fetchall()

    def histograms(self, run_id: int, exclude: tuple[str, ...] = ()) -> list[tuple[int, str, str]]:
        """(cell id, kind, HDR histogram) of the done cells of a run, but the kinds in `exclude`."""
        return [
            (int(c), str(k), str(d))
            for c, k, d in self.db.execute(
                "SELECT h.cell_id, h.kind, h.data FROM histograms h JOIN cells c ON c.id = h.cell_id "
                "WHERE c.run_id = ? AND c.status = 'done'",
                (run_id,),
            )
            if k not in exclude
        ]

    def provenance(self, run_id: int) -> dict[str, tuple[dict[str, Any], dict[str, Any], int]]:
        """target -> (the latest done cell's provenance, its build record, how many distinct provenance
        records the target's done cells have: resumes and placements differ)."""
        keys = ("source", "source_identity", "variant", "version", "bindir", "cc", "cflags", "configure")
        latest: dict[str, tuple[str | None, dict[str, Any]]] = {}
        seen: dict[str, set[int]] = {}
        for name, prov_id, data, *build in self.db.execute(
            "SELECT t.name, c.provenance_id, p.data, b.source, b.source_identity, b.variant, b.version, b.bindir, "
            "b.cc, b.cflags, b.configure FROM cells c JOIN targets t ON t.id = c.target_id "
            "LEFT JOIN provenance p ON p.id = c.provenance_id LEFT JOIN builds b ON b.id = c.build_id "
            "WHERE c.run_id = ? AND c.status = 'done' ORDER BY c.id",
            (run_id,),
        ):
            if prov_id is not None:
                seen.setdefault(str(name), set()).add(int(prov_id))
            record = dict(zip(keys, build, strict=True)) if build and build[0] is not None else {}
            latest[str(name)] = (data, record)
        out: dict[str, tuple[dict[str, Any], dict[str, Any], int]] = {}
        for name, (data, record) in latest.items():
            try:
                parsed = json.loads(data) if data else {}
            except ValueError:
                parsed = {}
            parsed = parsed if isinstance(parsed, dict) else {}
            if parsed or record:
                out[name] = (parsed, record, len(seen.get(name, ())))
        return out

    def run_of(self, run_id: int | None) -> tuple[int, str, str] | None:
        """(run id, the study's TOML as it was when the run started, the study file's path) of a run, or of the
        newest run when `run_id` is None."""
        query = "SELECT r.id, r.study_toml, s.path FROM runs r JOIN studies s ON s.id = r.study_id"
        row = (
            self.db.execute(query + " WHERE r.id = ?", (run_id,)).fetchone()
            if run_id is not None
            else self.db.execute(query + " ORDER BY r.id DESC LIMIT 1").fetchone()
        )
        return (int(row[0]), str(row[1]), str(row[2])) if row else None
