"""Benchmark suites behind one interface (`base.Suite`): sysbench's microbenchmarks and the Insert
Benchmark today, one package each; `registry` picks one from a study's `[suite] name`."""

from dbsweep.suites.base import Suite, SuiteSettings
from dbsweep.suites.registry import suite_for

__all__ = ["Suite", "SuiteSettings", "suite_for"]
