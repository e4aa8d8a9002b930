"""What the contract tests need of each engine beyond `dbsweep.engines.base.Engine`: how to ask its server a
question, capture the statements a client sent, end one backend the hard way, write a stale PID file, and
the words its server uses for a refused setting or a crash. The contract tests are written once against
this and run for every engine of `dbsweep.engines.registry.names()`.

An embedded engine (`Engine.kind == "embedded"`, SQLite) has no server: the tests ask its database file
directly, the load client records the statements it ran, and a test of something only a server has (a
backend, a crash restart, a PID file, a password, a socket, a server log) gives the engine's own equivalent
where there is one, else skips saying why. Where engines legitimately differ in what a test may expect, a
capability attribute below says how (never a looser check for every engine).

Adding an engine: a `Support` subclass here and one entry in SUPPORT (a test fails until there is one).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import shutil
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from dbsweep.engines.base import Access, Engine, Install, Instance
from dbsweep.engines.registry import engine_named


def merged(recorded: Iterable[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """(text, calls, rows) summed per text: a record that keeps a statement in several entries (per execution,
    per connection, per PREPARE and EXECUTE) as the contract reads it, once per statement."""
    out: dict[str, tuple[int, int]] = {}
    for text, calls, rows in recorded:
        c, n = out.get(text, (0, 0))
        out[text] = (c + calls, n + rows)
    return [(q, calls, n) for q, (calls, n) in out.items()]


class Support(ABC):
    """One engine, as the contract tests reach into it."""

    name: ClassVar[str]
    # Two shipped configs that differ (a study's targets a and b), and a small config for a test instance.
    configs: ClassVar[tuple[str, str]]
    small_config: ClassVar[str]
    # A setting small_config sets, as the running server's `settings()` names it.
    small_setting: ClassVar[str]
    # Config lines the server refuses at start, each with the words of its account that name the parameter and
    # the value (a server's log line; an embedded engine's own error, with the config's file and line).
    out_of_range: ClassVar[tuple[str, tuple[str, ...]]]
    bad_value: ClassVar[tuple[str, tuple[str, ...]]]
    # A value `validate` cannot see is wrong (the engine takes it until a start reads what it names), with the
    # words of the start's refusal; None when no such value is known for the engine.
    start_refused: ClassVar[tuple[str, tuple[str, ...]] | None] = None
    # The log words of a backend that was killed (the server's own account of a crash restart), and the words
    # of `Instance.disturbance_since` for a crash restart and for a server that died.
    killed_backend: ClassVar[str]
    crash_restart_words: ClassVar[tuple[str, ...]]
    died_words: ClassVar[tuple[str, ...]]
    # The name the server's processes have, and how many of them a working server has at least (its main
    # process, background processes, a backend); how the load client's error names a refused password. For an
    # embedded engine, the process that runs the engine's code is the load client.
    process_name: ClassVar[str]
    min_processes: ClassVar[int]
    auth_failure: ClassVar[str]
    # A config that makes the server log every connection, and the log words of one over the Unix socket and
    # one over TCP.
    log_connections: ClassVar[str]
    local_connection: ClassVar[str]
    tcp_connection: ClassVar[str]
    # A config that makes the server record the statements clients send (`statements`).
    statements_config: ClassVar[str]
    # Insert Benchmark: the column types the load client's CREATE TABLE gives, as `column_types` reads them;
    # the load client's own SQL (its summary's `sql`) that must read so; the error kind and words of a row a
    # CHECK constraint refuses.
    ibench_types: ClassVar[dict[str, str]]
    ibench_sql: ClassVar[dict[str, str | None]]
    check_violation: ClassVar[tuple[str, str]]
    # Whether the table's auto-increment hands a connection a cache of ids (a sequence's CACHE) that l.i0 sets
    # to the suite's SEQUENCE_CACHE; without one, `id_cache` is 1.
    has_id_cache: ClassVar[bool] = True
    # How l.x adds its three indexes to a table, as the start of each statement (pi1's).
    ibench_index_sql: ClassVar[tuple[str, ...]] = (
        "CREATE INDEX pi1_marketsegment ON pi1 ",
        "CREATE INDEX pi1_registersegment ON pi1 ",
        "CREATE INDEX pi1_pdc ON pi1 ",
    )
    # The statement record: the statement that begins a transaction that writes, as recorded, and whether a
    # constant in the client's SQL is recorded as a parameter (`?`, as pg_stat_statements normalises it) or as
    # the client wrote it.
    begin_write: ClassVar[str] = "BEGIN"
    constants_as_parameters: ClassVar[bool] = True
    # The executions of a step's statement the engine's record may miss (its calls fall short of the client's
    # events by at most this many, whatever the step's length); 0: the record counts every one.
    record_missed: ClassVar[int] = 0
    # Whether the benchmark database takes disk space before any table is made (a catalog, a file of its own).
    empty_database_on_disk: ClassVar[bool] = True
    # The server's setting for where it writes temporary files, if it has one outside its data directory: it must
    # be the instance's own (a MariaDB or MySQL server starting deletes every `#sql*` file of its tmpdir).
    tmpdir_setting: ClassVar[str | None] = None
    # The fields the engine adds to every step's `detail`, beside the suite's own.
    engine_detail: ClassVar[frozenset[str]] = frozenset()
    # Whether a CHAR(n) column gives its values back blank-padded to n (SQL's char; SQLite keeps the text, MariaDB
    # strips the blanks it padded with).
    char_padded: ClassVar[bool] = True
    # Whether each connection is served by a process of its own (a backend) that can be killed alone, and the
    # server then crash-restarts; a threaded server (MariaDB) serves every connection in its one process.
    backend_processes: ClassVar[bool] = True

    @property
    def engine(self) -> Engine:
        return engine_named(self.name)

    def install(self) -> Install:
        """The install the contract tests run: the engine's prebuilt one."""
        return self.engine.system_install("system")

    # ---- asking the server ------------------------------------------------------------------------------

    @abstractmethod
    def query(
        self, instance: Instance, sql: str, params: Sequence[Any] = (), database: str | None = None
    ) -> list[tuple[Any, ...]]:
        """Runs one statement (autocommit) and returns its rows (none for a statement without)."""

    @abstractmethod
    def client_sql(self, instance: Instance, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Runs a statement as the load client wrote it (with its placeholders) with `params`."""

    @abstractmethod
    def plan(self, instance: Instance, sql: str, params: Sequence[Any]) -> str:
        """How the server would run a statement the load client wrote."""

    @abstractmethod
    def create_database(self, instance: Instance, name: str) -> None: ...

    @abstractmethod
    def checkpoint(self, instance: Instance) -> None:
        """Writes what the server holds in memory to its data files, now."""

    @abstractmethod
    def indexes(self, instance: Instance, table: str) -> dict[str, tuple[str, ...]]:
        """Every index of a table: name -> its columns in order."""

    @abstractmethod
    def primary_key(self, table: str) -> str:
        """The name the engine gives a table's primary key index."""

    @abstractmethod
    def column_types(self, instance: Instance, table: str) -> dict[str, str]: ...

    @abstractmethod
    def columns(self, instance: Instance, table: str, database: str | None = None) -> list[tuple[Any, ...]]:
        """A table's columns in order, with their type, length, nullability and default (sequence names
        replaced by SEQ, which differ between tools that create the same table)."""

    @abstractmethod
    def index_definitions(self, instance: Instance, table: str, database: str | None = None) -> list[str]:
        """What each index indexes, without its name (names differ between tools)."""

    @abstractmethod
    def id_cache(self, instance: Instance, table: str) -> int:
        """How many ids of a table's auto-increment one connection takes at once."""

    @abstractmethod
    def add_check(self, instance: Instance, table: str, name: str, predicate: str) -> None:
        """A CHECK constraint that new rows must meet (existing rows are not checked)."""

    @abstractmethod
    def drop_check(self, instance: Instance, table: str, name: str) -> None: ...

    @abstractmethod
    def session(self, instance: Instance) -> contextlib.AbstractContextManager[int]:
        """An open client session for the block; gives the pid of the server process that serves it."""

    def database_file(self, instance: Instance) -> Path | None:
        """The file an embedded engine keeps the database in; None for a server's data directory."""
        return None

    # ---- statements a client sent ---------------------------------------------------------------------------

    @abstractmethod
    def start_capture(self, instance: Instance) -> None:
        """Whatever the server needs beside `statements_config` to record statements."""

    @abstractmethod
    def reset_statements(self, instance: Instance) -> None: ...

    @abstractmethod
    def statements(self, instance: Instance, database: str | None = None) -> list[tuple[str, int, int]]:
        """(text, calls, rows) of the statements clients sent to `database` (the benchmark's by default)
        since the last reset, with every parameter written `?`; the capture's own statements and the catalog
        lookups a client makes to check its tables are left out."""

    @abstractmethod
    def housekeeping(self, text: str) -> bool:
        """Whether a recorded statement is a session's housekeeping (settings, catalog queries), not work."""

    # ---- credentials ---------------------------------------------------------------------------------------

    def wrong_password(self, access: Access) -> Access | None:
        """The same way in, with a password the server refuses; None for an engine without credentials."""
        return Access(list(access.args), {**access.env, "DBSWEEP_PASSWORD": "wrong"})

    # ---- sysbench itself, for the equivalence test -------------------------------------------------------

    def sysbench_driver(self, instance: Instance, database: str) -> list[str] | None:
        """sysbench's options that reach `database` of this instance; None when sysbench has no driver."""
        return None

    # ---- stale servers --------------------------------------------------------------------------------------

    @abstractmethod
    def pidfile(self, datadir: Path) -> Path:
        """The file a running server leaves in its data directory."""

    @abstractmethod
    def write_pidfile(self, datadir: Path, pid: int, started: int) -> None:
        """A PID file as the server writes it, naming `pid`, this data directory and a start time."""

    def set_aside(self, datadir: Path) -> list[Path]:
        """The PID files `Engine.stop_stale` set aside."""
        pidfile = self.pidfile(datadir)
        return sorted(datadir.glob(f"{pidfile.name}.stale-*"))

    # ---- a kept data directory that no longer holds what its cells need ---------------------------------------

    @abstractmethod
    def damage(self, datadir: Path) -> None:
        """Leave the data directory of a stopped instance unable to serve its cells, as a fault would."""


class PostgresSupport(Support):
    name = "postgres"
    configs = ("cx10a_c2r24", "cx10a_sb1g_c2r24")
    small_config = "shared_buffers=128MB\n"
    small_setting = "shared_buffers"
    out_of_range = ("max_connections = -5\n", ('-5 is outside the valid range for parameter "max_connections"',))
    bad_value = (
        "# a value the server rejects at start\nshared_buffers = lots\n",
        ('invalid value for parameter "shared_buffers": "lots"',),
    )
    start_refused = (
        "# a certificate that is not there: postgres -C takes it, the start does not\nssl = on\n"
        "ssl_cert_file = 'missing.crt'\n",
        ('could not load server certificate file "missing.crt"',),
    )
    killed_backend = "was terminated by signal 9"
    crash_restart_words = ("the server crash-restarted its backends during the step", "was terminated by signal 9")
    died_words = ("the server died during the step", "killed by SIGKILL")
    process_name = "postgres"
    min_processes = 4  # postmaster, checkpointer, background writer, walwriter, a backend...
    auth_failure = "password authentication failed"
    log_connections = "log_connections=on\n"
    local_connection = "connection received: host=[local]"
    tcp_connection = "connection received: host=127.0.0.1"
    statements_config = "shared_preload_libraries = 'pg_stat_statements'\npg_stat_statements.max = 1000\n"
    ibench_types: ClassVar[dict[str, str]] = {
        "transactionid": "bigint",
        "dateandtime": "timestamp without time zone",
        "cashregisterid": "integer",
        "customerid": "integer",
        "productid": "integer",
        "price": "integer",
        "data": "character varying(4000)",
    }
    ibench_sql: ClassVar[dict[str, str | None]] = {
        "alter_sequence": "ALTER SEQUENCE pi1_transactionid_seq CACHE 1000",
        "delete": "DELETE FROM pi1 WHERE transactionid IN (SELECT transactionid FROM pi1",
    }
    check_violation = ("sqlstate-23514", "violates check constraint")

    @staticmethod
    def _server(instance: Instance) -> Any:
        from dbsweep.engines.postgres import Server

        assert isinstance(instance, Server)
        return instance

    def _connect(self, instance: Instance, database: str | None = None) -> Any:
        from dbsweep.engines.postgres import DB_NAME

        return self._server(instance).connect(database or DB_NAME)

    def query(
        self, instance: Instance, sql: str, params: Sequence[Any] = (), database: str | None = None
    ) -> list[tuple[Any, ...]]:
        with self._connect(instance, database) as c:
            cur = c.execute(sql, params or None)
            return list(cur.fetchall()) if cur.description is not None else []

    @staticmethod
    def _placeholders(sql: str) -> str:
        # The load client numbers its parameters ($1, $2, ...) in order; psycopg takes %s.
        return re.sub(r"\$\d+", "%s", sql)

    def client_sql(self, instance: Instance, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.query(instance, self._placeholders(sql), params)

    def plan(self, instance: Instance, sql: str, params: Sequence[Any]) -> str:
        return "\n".join(str(r[0]) for r in self.query(instance, "EXPLAIN " + self._placeholders(sql), params))

    def create_database(self, instance: Instance, name: str) -> None:
        self.query(instance, f"CREATE DATABASE {name}")

    def checkpoint(self, instance: Instance) -> None:
        self.query(instance, "CHECKPOINT")

    def indexes(self, instance: Instance, table: str) -> dict[str, tuple[str, ...]]:
        rows = self.query(
            instance,
            "SELECT i.relname, array_agg(a.attname ORDER BY k.n) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid "
            "CROSS JOIN LATERAL unnest(x.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum "
            "WHERE x.indrelid = %s::regclass GROUP BY i.relname",
            (table,),
        )
        return {name: tuple(cols) for name, cols in rows}

    def primary_key(self, table: str) -> str:
        return f"{table}_pkey"

    def column_types(self, instance: Instance, table: str) -> dict[str, str]:
        rows = self.query(
            instance,
            "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute "
            "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped",
            (table,),
        )
        return dict(rows)

    def columns(self, instance: Instance, table: str, database: str | None = None) -> list[tuple[Any, ...]]:
        return self.query(
            instance,
            "SELECT column_name, data_type, character_maximum_length, is_nullable, "
            "regexp_replace(coalesce(column_default, ''), '''[a-z0-9_]+_seq''', 'SEQ') "
            "FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
            (table,),
            database,
        )

    def index_definitions(self, instance: Instance, table: str, database: str | None = None) -> list[str]:
        rows = self.query(instance, "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (table,), database)
        return sorted(re.sub(r"INDEX \S+ ON", "INDEX ON", d) for (d,) in rows)

    def id_cache(self, instance: Instance, table: str) -> int:
        rows = self.query(
            instance,
            "SELECT s.seqcache FROM pg_sequence s WHERE s.seqrelid = pg_get_serial_sequence(%s, %s)::regclass",
            (table, "transactionid"),
        )
        return int(rows[0][0])

    def add_check(self, instance: Instance, table: str, name: str, predicate: str) -> None:
        self.query(instance, f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({predicate}) NOT VALID")

    def drop_check(self, instance: Instance, table: str, name: str) -> None:
        self.query(instance, f"ALTER TABLE {table} DROP CONSTRAINT {name}")

    @contextlib.contextmanager
    def session(self, instance: Instance) -> Iterator[int]:
        import psycopg

        c = self._connect(instance)
        try:
            row = c.execute("SELECT pg_backend_pid()").fetchone()
            yield int(row[0])
        finally:
            with contextlib.suppress(psycopg.Error):  # the test may have ended its backend
                c.close()

    def start_capture(self, instance: Instance) -> None:
        self.query(instance, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")

    def reset_statements(self, instance: Instance) -> None:
        self.query(instance, "SELECT pg_stat_statements_reset()")

    def statements(self, instance: Instance, database: str | None = None) -> list[tuple[str, int, int]]:
        from dbsweep.engines.postgres import DB_NAME

        rows = self.query(
            instance,
            "SELECT query, calls, rows FROM pg_stat_statements "
            "WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s) AND calls > 0 "
            "AND query !~ 'pg_stat_statements|pg_class'",
            (database or DB_NAME,),
        )
        return [(re.sub(r"\$\d+", "?", q), int(calls), int(n)) for q, calls, n in rows]

    def housekeeping(self, text: str) -> bool:
        return re.search(r"pg_catalog|^(SET|SHOW|DEALLOCATE)", text, re.IGNORECASE) is not None

    def sysbench_driver(self, instance: Instance, database: str) -> list[str] | None:
        from dbsweep.engines.postgres import DB_USER

        server = self._server(instance)
        # sysbench takes the password only as an option; this is a throwaway test server on loopback.
        return [
            "--db-driver=pgsql",
            "--pgsql-host=127.0.0.1",
            f"--pgsql-port={server.port}",
            f"--pgsql-user={DB_USER}",
            f"--pgsql-password={server.password}",
            f"--pgsql-db={database}",
        ]

    def pidfile(self, datadir: Path) -> Path:
        return datadir / "postmaster.pid"

    def write_pidfile(self, datadir: Path, pid: int, started: int) -> None:
        self.pidfile(datadir).write_text(f"{pid}\n{datadir}\n{started}\n5432\n/tmp\n")

    def damage(self, datadir: Path) -> None:
        (datadir / "global" / "pg_control").unlink()  # the server refuses to start without it


def _timestamp(value: bytes) -> datetime.datetime:
    """A TIMESTAMP column's text ('YYYY-MM-DD HH:MM:SS', as the load client stamps it) as a datetime."""
    return datetime.datetime.fromisoformat(value.decode())


# Columns declared TIMESTAMP read as datetimes, as Postgres's do (this test process's own converter, in place
# of the sqlite3 module's default one, which Python 3.12 deprecates).
sqlite3.register_converter("TIMESTAMP", _timestamp)


class SqliteSupport(Support):
    """SQLite, embedded: the tests reach the database file through Python's `sqlite3` module, which here is
    Debian's libsqlite3, the library the `system` install's load client opens. No server: nothing to kill,
    restart, authenticate or log; the load client is the process that runs the engine's code."""

    name = "sqlite"
    configs = ("wal_normal", "rollback")
    small_config = "journal_mode = WAL\ncache_size = -65536\n"
    small_setting = "cache_size"
    # A value SQLite keeps silently as the old one: Database.init reads every pragma back and refuses it.
    out_of_range = (
        "page_size = 131072\n",
        ("sets PRAGMA page_size = 131072 (", "does not take: it reads back as '4096'"),
    )
    bad_value = (
        "# a value SQLite does not take\njournal_mode = lots\n",
        ("sets PRAGMA journal_mode = lots (broken.conf:2), which SQLite", "does not take: it reads back as 'delete'"),
    )
    # No server process: no backend to kill, no crash restart, no server to die.
    killed_backend = ""
    crash_restart_words = ()
    died_words = ()
    process_name = "dbsweep-load"
    min_processes = 1  # the load client, whose threads run the library
    auth_failure = ""  # no credentials: the file's permissions are the only access control
    log_connections = ""
    local_connection = ""
    tcp_connection = ""
    # Nothing to load into the library: the load client records statements itself (`start_capture`).
    statements_config = small_config
    ibench_types: ClassVar[dict[str, str]] = {
        "transactionid": "INTEGER",
        "dateandtime": "TIMESTAMP",
        "cashregisterid": "INT",
        "customerid": "INT",
        "productid": "INT",
        "price": "INT",
        "data": "VARCHAR(4000)",
    }
    ibench_sql: ClassVar[dict[str, str | None]] = {
        "alter_sequence": None,  # the rowid has no id cache to set
        "delete": "DELETE FROM pi1 WHERE transactionid IN (SELECT transactionid FROM pi1",
    }
    # A real CHECK constraint (`add_check`), so the refusal is SQLite's own SQLITE_CONSTRAINT_CHECK.
    check_violation = ("sqlite_constraint_check", "CHECK constraint failed: cheap")
    has_id_cache = False
    begin_write = "BEGIN IMMEDIATE"  # the client takes the write lock when a writing transaction begins
    constants_as_parameters = False  # the capture keeps each text as the client wrote it
    engine_detail = frozenset({"engine_library"})
    char_padded = False  # CHAR(120) is only TEXT affinity: a value reads back as it was written

    @staticmethod
    def _database(instance: Instance) -> Any:
        from dbsweep.engines.sqlite import Database

        assert isinstance(instance, Database)
        return instance

    def database_file(self, instance: Instance) -> Path | None:
        return self._file(instance, None)

    def _file(self, instance: Instance, database: str | None) -> Path:
        """The instance's database file, or another database (`create_database`) beside it."""
        db = self._database(instance)
        return Path(db.database) if database is None else Path(db.datadir) / f"{database}.db"

    @contextlib.contextmanager
    def _connect(self, instance: Instance, database: str | None = None) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode, closed after the block (an open one would keep the WAL)."""
        path = self._file(instance, database)
        if not path.is_file():  # sqlite3 would create an empty file where none is
            raise sqlite3.OperationalError(f"no database file {path}")
        c = sqlite3.connect(path, isolation_level=None, detect_types=sqlite3.PARSE_DECLTYPES, timeout=30)
        try:
            yield c
        finally:
            c.close()

    def query(
        self, instance: Instance, sql: str, params: Sequence[Any] = (), database: str | None = None
    ) -> list[tuple[Any, ...]]:
        with self._connect(instance, database) as c:
            cur = c.execute(sql, tuple(params))
            return [tuple(r) for r in cur.fetchall()] if cur.description is not None else []

    def client_sql(self, instance: Instance, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        # The client's placeholders (?1, ?2, ...) are SQLite's own: bound by position.
        return self.query(instance, sql, params)

    def plan(self, instance: Instance, sql: str, params: Sequence[Any]) -> str:
        return "\n".join(str(r[3]) for r in self.query(instance, "EXPLAIN QUERY PLAN " + sql, params))

    def create_database(self, instance: Instance, name: str) -> None:
        """Another database file in the instance's directory (`query(database=name)` opens it)."""
        path = self._file(instance, name)
        sqlite3.connect(path).close()

    def checkpoint(self, instance: Instance) -> None:
        """The WAL copied into the database file and emptied (nothing is cached across connections)."""
        ((busy, _, _),) = self.query(instance, "PRAGMA wal_checkpoint(TRUNCATE)")
        assert busy == 0, "another connection kept the checkpoint from finishing"

    def indexes(self, instance: Instance, table: str) -> dict[str, tuple[str, ...]]:
        """The table's indexes; a rowid table's INTEGER PRIMARY KEY is the key of the table's own b-tree (a
        clustered primary key index without a name of its own), listed as `primary_key(table)`."""
        out: dict[str, tuple[str, ...]] = {}
        with self._connect(instance) as c:
            for _, name, _, origin, _ in c.execute("SELECT * FROM pragma_index_list(?)", (table,)).fetchall():
                cols = c.execute("SELECT name FROM pragma_index_info(?) ORDER BY seqno", (name,)).fetchall()
                out[self.primary_key(table) if origin == "pk" else name] = tuple(col for (col,) in cols)
            pk = c.execute("SELECT name, type FROM pragma_table_info(?) WHERE pk > 0", (table,)).fetchall()
            if len(pk) == 1 and pk[0][1].upper() == "INTEGER" and self.primary_key(table) not in out:
                out[self.primary_key(table)] = (pk[0][0],)
        return out

    def primary_key(self, table: str) -> str:
        return f"{table} (rowid)"

    def column_types(self, instance: Instance, table: str) -> dict[str, str]:
        """The types as the table declares them (PRAGMA table_info), which is what SQLite keeps."""
        return {
            str(n): str(t) for n, t in self.query(instance, "SELECT name, type FROM pragma_table_info(?)", (table,))
        }

    def columns(self, instance: Instance, table: str, database: str | None = None) -> list[tuple[Any, ...]]:
        return self.query(
            instance,
            "SELECT name, type, NULL, CASE WHEN \"notnull\" THEN 'NO' ELSE 'YES' END, coalesce(dflt_value, '') "
            "FROM pragma_table_info(?) ORDER BY cid",
            (table,),
            database,
        )

    def index_definitions(self, instance: Instance, table: str, database: str | None = None) -> list[str]:
        rows = self.query(
            instance,
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL",
            (table,),
            database,
        )
        return sorted(re.sub(r"INDEX \S+ ON", "INDEX ON", d) for (d,) in rows)

    def id_cache(self, instance: Instance, table: str) -> int:
        """A new rowid is the largest one plus one, read from the table at each insert: no cache (1)."""
        return 1

    def add_check(self, instance: Instance, table: str, name: str, predicate: str) -> None:
        """SQLite has no ALTER TABLE ... ADD CONSTRAINT. A CHECK constraint changes nothing in the file's
        format, so the table's CREATE statement in the schema is rewritten to hold it (SQLite's documented way
        for such changes: writable_schema, and a new schema version so every connection reads it again). Like
        Postgres's NOT VALID, rows already there are not checked; new rows are, by SQLite itself."""
        sql = self._table_sql(instance, table)
        assert sql.rstrip().endswith(")"), sql
        self._rewrite_schema(instance, table, f"{sql.rstrip()[:-1]}, CONSTRAINT {name} CHECK ({predicate}))")

    def drop_check(self, instance: Instance, table: str, name: str) -> None:
        sql = self._table_sql(instance, table)
        without = re.sub(rf", CONSTRAINT {re.escape(name)} CHECK \(.*\)\)$", ")", sql.rstrip())
        assert without != sql.rstrip(), f"no CHECK constraint {name} in {sql}"
        self._rewrite_schema(instance, table, without)

    def _table_sql(self, instance: Instance, table: str) -> str:
        ((sql,),) = self.query(instance, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        return str(sql)

    def _rewrite_schema(self, instance: Instance, table: str, sql: str) -> None:
        with self._connect(instance) as c:
            c.execute("BEGIN IMMEDIATE")
            ((version,),) = c.execute("PRAGMA schema_version").fetchall()
            c.execute("PRAGMA writable_schema = ON")
            c.execute("UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?", (sql, table))
            c.execute(f"PRAGMA schema_version = {int(version) + 1}")
            c.execute("PRAGMA writable_schema = OFF")
            c.execute("COMMIT")

    @contextlib.contextmanager
    def session(self, instance: Instance) -> Iterator[int]:
        """A connection of this process: the library serves it here, so the pid is this process's own."""
        with self._connect(instance) as c:
            c.execute("SELECT 1").fetchall()
            yield os.getpid()

    # The load client records its statements itself when `Database.capture` names a file: one JSON line
    # {"sql", "calls", "rows"} per text per session, appended when the session ends.

    @staticmethod
    def _capture(instance: Instance) -> Path:
        db = SqliteSupport._database(instance)
        assert db.capture is not None, "start_capture first"
        return Path(db.capture)

    def start_capture(self, instance: Instance) -> None:
        db = self._database(instance)
        db.capture = db.home / "statements.jsonl"
        db.capture.write_text("")

    def reset_statements(self, instance: Instance) -> None:
        self._capture(instance).write_text("")

    def statements(self, instance: Instance, database: str | None = None) -> list[tuple[str, int, int]]:
        """The record's lines merged per text, with ?N written `?`; the sessions' PRAGMAs (the config the client
        applies on every connection) and its reads of the catalog (sqlite_master) are left out. Every client
        opens the instance's own database file, so `database` must be None."""
        assert database is None, "the load client records what it ran, whatever the file"
        lines = [json.loads(line) for line in self._capture(instance).read_text().splitlines()]
        texts = [(re.sub(r"\?\d+", "?", d["sql"]), int(d["calls"]), int(d["rows"])) for d in lines]
        kept = [t for t in texts if not (re.match(r"\s*PRAGMA\b", t[0], re.IGNORECASE) or "sqlite_master" in t[0])]
        return [(q, calls, n) for q, calls, n in merged(kept) if calls > 0]

    def housekeeping(self, text: str) -> bool:
        return re.search(r"sqlite_master|sqlite_schema|^\s*PRAGMA\b", text, re.IGNORECASE) is not None

    def wrong_password(self, access: Access) -> Access | None:
        return None  # no credentials: the client opens the file as the user it runs as

    # No server, so no PID file: nothing outlives dbsweep on a database file (the load client dies with it).

    def pidfile(self, datadir: Path) -> Path:
        raise NotImplementedError("SQLite writes no PID file: no server runs on a database file")

    def write_pidfile(self, datadir: Path, pid: int, started: int) -> None:
        raise NotImplementedError("SQLite writes no PID file: no server runs on a database file")

    def set_aside(self, datadir: Path) -> list[Path]:
        return []  # Sqlite.stop_stale has no PID file to set aside

    def damage(self, datadir: Path) -> None:
        """Another, empty database file where the loaded one was: SQLite opens it without a word."""
        from dbsweep.engines.sqlite.instance import DB_FILE

        for f in datadir.glob(f"{DB_FILE}*"):
            f.unlink()
        (datadir / DB_FILE).write_bytes(b"")


class MariadbSupport(Support):
    """MariaDB, a server of one process (threads): the tests reach it with PyMySQL over loopback TCP as the
    instance's own user. No backend process to kill alone and no crash restart (without mysqld_safe nothing
    restarts it: a crash is a server that died). Statements are recorded by the slow query log with
    long_query_time = 0 into its table (mysql.slow_log): every statement with its database and the rows it
    sent or changed, a prepared statement's with its parameters' values, which the capture writes `?` as
    pg_stat_statements does. The general log (`log_connections`) goes into the server's log file, where the
    connection test reads it."""

    name = "mariadb"
    configs = ("cz12a_c2r24", "za4_c2r24")
    small_config = "innodb_buffer_pool_size = 128M\n"
    small_setting = "innodb_buffer_pool_size"
    tmpdir_setting = "tmpdir"
    # An unsigned option given a negative value: the server says so before it opens its log (on stderr, which
    # dbsweep sends to the log too), and stops.
    out_of_range: ClassVar[tuple[str, tuple[str, ...]]] = (
        "max_connections = -5\n",
        ("Incorrect unsigned value: '-5' for max_connections", "Error while setting value '-5' to 'max_connections'"),
    )
    bad_value: ClassVar[tuple[str, tuple[str, ...]]] = (
        "# a value the server rejects at start\ninnodb_buffer_pool_size = lots\n",
        ("Error while setting value 'lots' to 'innodb-buffer-pool-size'",),
    )
    killed_backend = ""
    crash_restart_words = ()
    died_words = ("the server died during the step", "killed by SIGKILL")
    process_name = "mariadbd"
    min_processes = 1  # one process; its threads serve the connections and do the background work
    auth_failure = "Access denied for user"
    # The general log, into the server's log file (a relative name is the data directory's: home/data).
    log_connections = "general_log = ON\ngeneral_log_file = ../server.log\n"
    local_connection = "@localhost on dbsweep using Socket"
    tcp_connection = "using TCP/IP"
    statements_config = small_config + "slow_query_log = ON\nlong_query_time = 0\nlog_output = TABLE\n"
    ibench_types: ClassVar[dict[str, str]] = {
        "transactionid": "bigint(20)",
        "dateandtime": "datetime",
        "cashregisterid": "int(11)",
        "customerid": "int(11)",
        "productid": "int(11)",
        "price": "int(11)",
        "data": "varchar(4000)",
    }
    ibench_sql: ClassVar[dict[str, str | None]] = {
        "alter_sequence": None,  # AUTO_INCREMENT hands out ids one by one: nothing to set
        "delete": "DELETE FROM pi1 WHERE transactionid >= ",
    }
    check_violation = ("mysql_4025", "CONSTRAINT `cheap` failed")
    has_id_cache = False
    # InnoDB (the contract's tables' engine) adds the three in one ALTER TABLE, as the Insert Benchmark does.
    ibench_index_sql = (
        "ALTER TABLE pi1 ADD INDEX pi1_marketsegment (productid, customerid, price), ADD INDEX pi1_registersegment ",
    )
    char_padded = False
    backend_processes = False

    @staticmethod
    def _server(instance: Instance) -> Any:
        from dbsweep.engines.mariadb import Server

        assert isinstance(instance, Server)
        return instance

    @contextlib.contextmanager
    def _connect(self, instance: Instance, database: str | None = None) -> Iterator[Any]:
        from dbsweep.engines.mariadb import DB_NAME

        c = self._server(instance).connect(database or DB_NAME)
        try:
            yield c
        finally:
            c.close()

    def query(
        self, instance: Instance, sql: str, params: Sequence[Any] = (), database: str | None = None
    ) -> list[tuple[Any, ...]]:
        with self._connect(instance, database) as c, c.cursor() as cur:
            cur.execute(sql, tuple(params) if params else None)
            return [tuple(r) for r in cur.fetchall()] if cur.description is not None else []

    @staticmethod
    def _placeholders(sql: str) -> str:
        # The load client's placeholders are `?`; PyMySQL takes %s (and a literal % doubled).
        return sql.replace("%", "%%").replace("?", "%s")

    def client_sql(self, instance: Instance, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        return self.query(instance, self._placeholders(sql), params)

    def plan(self, instance: Instance, sql: str, params: Sequence[Any]) -> str:
        rows = self.query(instance, "EXPLAIN " + self._placeholders(sql), params)
        return "\n".join(" ".join(str(v) for v in r) for r in rows)

    def create_database(self, instance: Instance, name: str) -> None:
        self.query(instance, f"CREATE DATABASE {name}")

    def checkpoint(self, instance: Instance) -> None:
        """Every dirty page written back: the page cleaner, with no dirty pages allowed, until none is left."""
        with self._connect(instance) as c, c.cursor() as cur:
            cur.execute("SELECT @@innodb_max_dirty_pages_pct, @@innodb_max_dirty_pages_pct_lwm")
            ((pct, lwm),) = cur.fetchall()
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct_lwm = 0")
            cur.execute("SET GLOBAL innodb_max_dirty_pages_pct = 0")
            try:
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:
                    cur.execute("SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'")
                    if int(cur.fetchall()[0][1]) == 0:
                        break
                    time.sleep(0.1)
                else:
                    raise AssertionError("InnoDB kept dirty pages for 120 s")
            finally:
                cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct = {float(pct)}")
                cur.execute(f"SET GLOBAL innodb_max_dirty_pages_pct_lwm = {float(lwm)}")
            cur.execute("SELECT 1 FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB' AND SUPPORT <> 'NO'")
            if cur.fetchall():  # MyRocks's memtables too, when it is loaded
                cur.execute("SET GLOBAL rocksdb_force_flush_memtable_now = 1")

    def indexes(self, instance: Instance, table: str) -> dict[str, tuple[str, ...]]:
        rows = self.query(
            instance,
            "SELECT INDEX_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            (table,),
        )
        out: dict[str, tuple[str, ...]] = {}
        for index, column in rows:
            out[str(index)] = (*out.get(str(index), ()), str(column))
        return out

    def primary_key(self, table: str) -> str:
        return "PRIMARY"

    def column_types(self, instance: Instance, table: str) -> dict[str, str]:
        rows = self.query(
            instance,
            "SELECT COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s",
            (table,),
        )
        return {str(n): str(t) for n, t in rows}

    def columns(self, instance: Instance, table: str, database: str | None = None) -> list[tuple[Any, ...]]:
        return self.query(
            instance,
            "SELECT COLUMN_NAME, COLUMN_TYPE, CHARACTER_MAXIMUM_LENGTH, IS_NULLABLE, COALESCE(COLUMN_DEFAULT, ''), "
            "EXTRA FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s "
            "ORDER BY ORDINAL_POSITION",
            (table,),
            database,
        )

    def index_definitions(self, instance: Instance, table: str, database: str | None = None) -> list[str]:
        rows = self.query(
            instance,
            "SELECT INDEX_NAME, NON_UNIQUE, INDEX_TYPE, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX) "
            "FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s "
            "GROUP BY INDEX_NAME, NON_UNIQUE, INDEX_TYPE",
            (table,),
            database,
        )
        out = []
        for name, non_unique, kind, cols in rows:
            what = "PRIMARY KEY" if name == "PRIMARY" else "INDEX" if non_unique else "UNIQUE INDEX"
            out.append(f"{what} USING {kind} ({cols})")
        return sorted(out)

    def id_cache(self, instance: Instance, table: str) -> int:
        """AUTO_INCREMENT takes each id from the table's counter as a row is inserted: no cache (1)."""
        return 1

    def add_check(self, instance: Instance, table: str, name: str, predicate: str) -> None:
        """With check_constraint_checks off in the session that adds it, the rows already there are not checked
        (as Postgres's NOT VALID); new rows are."""
        with self._connect(instance) as c, c.cursor() as cur:
            cur.execute("SET SESSION check_constraint_checks = OFF")
            cur.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK ({predicate})")

    def drop_check(self, instance: Instance, table: str, name: str) -> None:
        self.query(instance, f"ALTER TABLE {table} DROP CONSTRAINT {name}")

    @contextlib.contextmanager
    def session(self, instance: Instance) -> Iterator[int]:
        """A connection; a thread of the server's one process serves it, so the pid is the server's."""
        with self._connect(instance) as c, c.cursor() as cur:
            cur.execute("SELECT 1")
            pid = instance.pid
            assert pid is not None
            yield pid

    # The slow query log's table, every statement with long_query_time = 0 (statements_config).

    def start_capture(self, instance: Instance) -> None:
        self.reset_statements(instance)

    def reset_statements(self, instance: Instance) -> None:
        self.query(instance, "TRUNCATE TABLE mysql.slow_log")

    # A literal as the log writes a prepared statement's parameter, or the client's constant: a quoted string,
    # a number (not a digit inside a name such as sbtest1).
    _LITERAL = re.compile(r"'(?:[^'\\]|\\.|'')*'|(?<![\w.])\d+(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")

    def statements(self, instance: Instance, database: str | None = None) -> list[tuple[str, int, int]]:
        """The slow log's statements in `database` merged per text with every literal written `?`; the capture's
        own queries and the sessions' housekeeping (SET, SHOW, catalog lookups) are left out."""
        from dbsweep.engines.mariadb import DB_NAME

        rows = self.query(
            instance,
            "SELECT sql_text, rows_sent, rows_affected FROM mysql.slow_log WHERE db = %s",
            (database or DB_NAME,),
        )
        texts = [(t.decode() if isinstance(t, bytes) else str(t), int(sent) + int(hit)) for t, sent, hit in rows]
        return merged(
            (self._LITERAL.sub("?", sql.strip()), 1, n)
            for sql, n in texts
            if "slow_log" not in sql and not self.housekeeping(sql)
        )

    def housekeeping(self, text: str) -> bool:
        return (
            re.search(
                r"^\s*(?:(?:SET|SHOW|USE)\b|SELECT\s+(?:@@|DATABASE\(\)|VERSION\(\)))|information_schema",
                text,
                re.IGNORECASE,
            )
            is not None
        )

    def sysbench_driver(self, instance: Instance, database: str) -> list[str] | None:
        from dbsweep.engines.mariadb import DB_USER

        server = self._server(instance)
        # sysbench takes the password only as an option; this is a throwaway test server on loopback.
        return [
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={server.port}",
            f"--mysql-user={DB_USER}",
            f"--mysql-password={server.password}",
            f"--mysql-db={database}",
        ]

    def pidfile(self, datadir: Path) -> Path:
        return datadir / "mariadbd.pid"

    def write_pidfile(self, datadir: Path, pid: int, started: int) -> None:
        """The server writes its PID alone (no start time: stop_stale reads where the process runs)."""
        self.pidfile(datadir).write_text(f"{pid}\n")

    def damage(self, datadir: Path) -> None:
        shutil.rmtree(datadir / "mysql")  # the privilege tables: the server refuses to start without them


class MysqlSupport(MariadbSupport):
    """Oracle's MySQL, a server of MariaDB's family built from source (no prebuilt package here): what differs
    from MariaDB is its account of a refused option, its types' display (no widths), its CHECK constraints, its
    statement record (performance_schema's digests, pg_stat_statements' equivalent: the slow log has no
    affected rows) and where its system tables are."""

    name = "mysql"
    configs = ("cz12a_c2r24", "cz12a_c2r24")
    # MySQL takes a number out of range and clamps it (max_connections = -5 becomes 1, with a warning); a mode it
    # does not know it refuses, while it makes the data directory already.
    out_of_range: ClassVar[tuple[str, tuple[str, ...]]] = (
        "sql_mode = NOT_A_MODE\n",
        ("Error while setting value 'NOT_A_MODE' to 'sql_mode'",),
    )
    bad_value: ClassVar[tuple[str, tuple[str, ...]]] = (
        "# a value the server rejects at start\ninnodb_buffer_pool_size = lots\n",
        ("innodb-buffer-pool-size", "lots"),
    )
    died_words = ("the server died during the step", "killed by SIGKILL")
    process_name = "mysqld"
    ibench_types: ClassVar[dict[str, str]] = {
        "transactionid": "bigint",
        "dateandtime": "datetime",
        "cashregisterid": "int",
        "customerid": "int",
        "productid": "int",
        "price": "int",
        "data": "varchar(4000)",
    }
    check_violation = ("mysql_1644", "Check constraint 'cheap' is violated")
    # performance_schema's digest summary misses the odd execution of a prepared statement, a few a step whatever
    # its length (measured here: 1 to 4 short of 10,000 calls, and 4 short of 1,450 in a one-second step on a
    # loaded machine; the missed call's rows still summed in): twice the most seen.
    record_missed = 8
    # MySQL 8 keeps a database's definition in its data dictionary (mysql.ibd), with no db.opt: an empty
    # database is an empty directory.
    empty_database_on_disk = False
    statements_config = (
        MariadbSupport.small_config + "performance_schema = ON\nperformance_schema_max_sql_text_length = 65536\n"
    )

    def install(self) -> Install:
        from ..sourcebuilds import source_install

        return source_install(self.name)

    def add_check(self, instance: Instance, table: str, name: str, predicate: str) -> None:
        """MySQL checks every row already there when a CHECK constraint is added (NOT ENFORCED checks none, and
        ENFORCED later checks them all again): new rows alone are checked by a trigger that refuses what breaks
        the predicate, as a CHECK constraint would, with SQLSTATE 45000 (error 1644) and its own words. The tests'
        predicates are `column op value`: the column is the new row's."""
        column, _, rest = predicate.partition(" ")
        self.query(
            instance,
            f"CREATE TRIGGER {name} BEFORE INSERT ON {table} FOR EACH ROW IF NOT (NEW.{column} {rest}) THEN "
            f"SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'Check constraint ''{name}'' is violated.'; END IF",
        )

    def drop_check(self, instance: Instance, table: str, name: str) -> None:
        self.query(instance, f"DROP TRIGGER {name}")

    def reset_statements(self, instance: Instance) -> None:
        self.query(instance, "TRUNCATE TABLE performance_schema.events_statements_summary_by_digest")

    def statements(self, instance: Instance, database: str | None = None) -> list[tuple[str, int, int]]:
        """performance_schema's statement digests in `database`, each by its sample text (the statement as the
        client wrote it; a prepared one with its `?`), merged per text: the digest itself rewrites a statement
        (`( k , c , pad ) VALUES (...)`, DISTINCT as DISTINCTROW) and keeps a prepared statement's PREPARE
        apart from its EXECUTEs. The PREPAREs and DEALLOCATEs are left out (they run no query), as are the
        capture's own queries and the housekeeping."""
        from dbsweep.engines.mariadb import DB_NAME

        rows = self.query(
            instance,
            "SELECT DIGEST_TEXT, QUERY_SAMPLE_TEXT, COUNT_STAR, SUM_ROWS_SENT + SUM_ROWS_AFFECTED "
            "FROM performance_schema.events_statements_summary_by_digest WHERE SCHEMA_NAME = %s",
            (database or DB_NAME,),
        )
        executed = [
            (self._LITERAL.sub("?", str(sample or "").strip()), int(calls), int(n))
            for digest, sample, calls, n in rows
            if not re.match(r"(PREPARE|DEALLOCATE)\b", str(digest or ""))
        ]
        return merged(t for t in executed if "events_statements" not in t[0] and not self.housekeeping(t[0]))

    def damage(self, datadir: Path) -> None:
        (datadir / "mysql.ibd").unlink()  # the system tables: the server refuses to start without them


SUPPORT: dict[str, Support] = {
    s.name: s for s in (PostgresSupport(), SqliteSupport(), MariadbSupport(), MysqlSupport())
}
