"""Errors that reach the user as one or two plain sentences."""


class DbsweepError(Exception):
    """A failure the user can act on; the CLI prints its message without a traceback."""


class StudyError(DbsweepError):
    """A study file that cannot be used. Holds one message per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class ServerError(DbsweepError):
    """A server that failed to initialise, start or answer."""


class StepError(DbsweepError):
    """A benchmark step that could not produce a result."""
