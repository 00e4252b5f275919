"""The suite's command-line error policy: one base class for errors a user can fix, and one
wrapper around every command's `main`.

A `UserError` (a bad configuration or flag, a missing or malformed input file, an occupied
or locked output directory, codes no metric can score) is printed as one message,
`error: ...`, on stderr, and the command exits with status 2; anything else is a bug or an
environment failure and shows its traceback. The user-facing exception classes of the
suite (RunError, ReportError, ConfigMismatch, DirectoryLocked, MetricInputError,
DataFileError, ArtefactError, ...) derive from UserError; a command turns other exceptions
it knows to be the user's (a gin parse error, say) into a UserError where it catches them.

This module imports nothing of the suite, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import functools
import sys

#: exit status of a command stopped by a UserError (absl's usage errors exit 1)
USER_ERROR_EXIT = 2
#: what gin appends to an exception raised inside a configurable: not for users
_GIN_NOTE = "\n  In call to configurable"


class UserError(Exception):
    """An error the user can fix; its message says what was expected and what was found."""


def user_message(error: BaseException) -> str:
    """The message of `error` without gin's note on the configurable it was raised in."""
    return str(error).split(_GIN_NOTE)[0]


def cli_main(main):
    """Wraps a command's `main(argv)`: a UserError prints `error: <message>` on stderr and
    exits 2; every other exception propagates (traceback). Use as a decorator."""

    @functools.wraps(main)
    def wrapper(argv):
        try:
            return main(argv)
        except UserError as error:
            sys.stdout.flush()
            print(f"error: {user_message(error)}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)

    wrapper.cli_error_policy = True
    return wrapper


def uses_cli_policy(main) -> bool:
    """Whether `main` goes through `cli_main` (tests check every command's main)."""
    return getattr(main, "cli_error_policy", False) is True


@contextlib.contextmanager
def user_errors(*types: type[BaseException], prefix: str = ""):
    """Within the block, an exception of one of `types` (ones a command knows to be the
    user's, e.g. gin's parse errors) is raised again as a UserError: `prefix` + message."""
    try:
        yield
    except types as error:
        raise UserError(f"{prefix}{error}") from error
