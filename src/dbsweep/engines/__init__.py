"""One module per engine: where installs come from, and the server lifecycle."""

ENGINES = ("postgres",)
