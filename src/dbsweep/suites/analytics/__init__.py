"""The analytics suite's tables and queries, derived from TPC-H (and, to come, TPC-DS): the groundwork of a
suite that loads a generated data set and times each query. The data come from `tpcgen-cli` (a dependency);
the query texts were written from the specification's definitions, with its validation parameters."""
