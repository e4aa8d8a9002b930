"""One MySQL instance: MariaDB's server lifecycle (`engines.mariadb.instance`), with MySQL's own data directory
initialisation, option file section and server binary."""

from __future__ import annotations

from dbsweep.engines.mariadb.instance import Server as MariadbServer


class Server(MariadbServer):
    """One MySQL instance: a data directory in the workspace and, while running, its process."""
