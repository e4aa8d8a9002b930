"""What the contract tests need of each engine beyond `dbsweep.engines.base.Engine`: how to ask its server a
question, capture the statements a client sent, end one backend the hard way, write a stale PID file, and
the words its server uses for a refused setting or a crash. The contract tests are written once against
this and run for every engine of `dbsweep.engines.registry.names()`.

Adding an engine: a `Support` subclass here and one entry in SUPPORT (a test fails until there is one).
"""

from __future__ import annotations

import contextlib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from dbsweep.engines.base import Access, Engine, Install, Instance
from dbsweep.engines.registry import engine_named


class Support(ABC):
    """One engine, as the contract tests reach into it."""

    name: ClassVar[str]
    # Two shipped configs that differ (a study's targets a and b), and a small config for a test instance.
    configs: ClassVar[tuple[str, str]]
    small_config: ClassVar[str]
    # A setting small_config sets, as the running server's `settings()` names it.
    small_setting: ClassVar[str]
    # Config lines the server refuses at start, each with the log line that names the parameter and value.
    out_of_range: ClassVar[tuple[str, str]]
    bad_value: ClassVar[tuple[str, str]]
    # The log words of a backend that was killed (the server's own account of a crash restart), and the words
    # of `Instance.disturbance_since` for a crash restart and for a server that died.
    killed_backend: ClassVar[str]
    crash_restart_words: ClassVar[tuple[str, ...]]
    died_words: ClassVar[tuple[str, ...]]
    # The name the server's processes have, and how many of them a working server has at least (its main
    # process, background processes, a backend); how the load client's error names a refused password.
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
    ibench_sql: ClassVar[dict[str, str]]
    check_violation: ClassVar[tuple[str, str]]

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

    @abstractmethod
    def wrong_password(self, access: Access) -> Access:
        """The same way in, with a password the server refuses."""

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

    @abstractmethod
    def set_aside(self, datadir: Path) -> list[Path]:
        """The PID files `Engine.stop_stale` set aside."""


class PostgresSupport(Support):
    name = "postgres"
    configs = ("cx10a_c2r24", "cx10a_sb1g_c2r24")
    small_config = "shared_buffers=128MB\n"
    small_setting = "shared_buffers"
    out_of_range = ("max_connections = -5\n", '-5 is outside the valid range for parameter "max_connections"')
    bad_value = (
        "# a value the server rejects at start\nshared_buffers = lots\n",
        'invalid value for parameter "shared_buffers": "lots"',
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
    ibench_sql: ClassVar[dict[str, str]] = {
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

    def wrong_password(self, access: Access) -> Access:
        return Access(list(access.args), {**access.env, "DBSWEEP_PGPASSWORD": "wrong"})

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

    def set_aside(self, datadir: Path) -> list[Path]:
        return sorted(datadir.glob("postmaster.pid.stale-*"))


SUPPORT: dict[str, Support] = {s.name: s for s in (PostgresSupport(),)}
