"""dbsweep: find out whether a database engine got faster or slower, and why."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("dbsweep")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
