"""How dbsweep prints: text is text.

Messages carry words from engines, files, paths and users (a config value in square brackets, a log line quoting a
bracketed path). Rich would read square brackets as markup, drop them or fail on them, so nothing dbsweep prints
goes through a markup parser: every console is made here with markup (and emoji codes) off, and styled words
are built as `Text` by `styled` and `line`, which take their strings literally.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console
from rich.progress import TextColumn
from rich.text import Text


def console(stderr: bool = False, **kwargs: Any) -> Console:
    """A console that prints strings as they are. Written to a file or a pipe (a log, CI) it is 160 columns
    wide instead of rich's 80, which would cut the numbers in wide tables; COLUMNS still wins."""
    if "file" not in kwargs and "width" not in kwargs:
        stream = sys.stderr if stderr else sys.stdout
        if not stream.isatty() and "COLUMNS" not in os.environ:
            kwargs["width"] = 160
    return Console(stderr=stderr, markup=False, emoji=False, highlight=False, **kwargs)


def styled(text: object, style: str) -> Text:
    """`text` in `style`, its brackets kept."""
    return Text(str(text), style=style)


def line(*parts: str | Text) -> Text:
    """Parts joined into one line; plain strings stay plain, whatever brackets they hold."""
    return Text.assemble(*parts)


def column(field: str, style: str = "") -> TextColumn:
    """A progress bar's text column that shows its field literally (task descriptions name targets and steps)."""
    return TextColumn(field, style=style, markup=False)
