"""Database engines behind one interface (`base.Engine`, `base.Instance`): Postgres today, one package each;
`registry` picks one from a study's `engine`. Only modules in here import a database driver."""
