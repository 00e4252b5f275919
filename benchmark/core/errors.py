"""The suite's command-line error policy: one base class for errors a user can fix, and one
wrapper around every command's `main`.

A `UserError` (a bad configuration or flag, a missing or malformed input file, an occupied
or locked output directory, codes no metric can score) is printed as one message,
`error: ...`, on stderr, and the command exits with status 2, and so is a write that failed
for a full disk, a read-only file system or a forbidden path (`STORAGE_ERRNOS`), a usage
error and an unknown or malformed flag (`run_command`, which every command's `__main__`
calls instead of absl's `app.run`; its --help exits 0); anything else is a bug or an
environment failure and shows its traceback. The user-facing exception classes of the
suite (RunError, ReportError, ConfigMismatch, DirectoryLocked, MetricInputError,
DataFileError, ArtefactError, ...) derive from UserError; a command turns other exceptions
it knows to be the user's (a gin parse error, say) into a UserError where it catches them.

This module imports nothing of the suite, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import signal
import sys

#: exit status of a command stopped by a UserError (absl's usage errors exit 1)
USER_ERROR_EXIT = 2
#: errno values of a failed write the user fixes: a full disk or quota, a read-only file
#: system, a forbidden path (printed as one line, like a UserError)
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES,
                            errno.EPERM})
#: what gin appends to an exception raised inside a configurable: not for users
_GIN_NOTE = "\n  In call to configurable"


class UserError(Exception):
    """An error the user can fix; its message says what was expected and what was found."""


class ConfigError(UserError, ValueError):
    """A setting the suite cannot use: an unknown name (dataset, variant, method) or a value
    out of its range (a negative β, eps outside (0, 1]). Raised where the setting is read,
    so every command that reads it stops with one line."""


def check_range(name: str, value, low: float | None = None, high: float | None = None,
                low_open: bool = False) -> float:
    """`value` as a float if it is a real number in [low, high] ((low, high] with
    `low_open`); else ConfigError naming the setting, the range and what was found."""
    import math
    import numbers

    ok = (isinstance(value, numbers.Real) and not isinstance(value, bool)
          and math.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        bounds = (f"{'(' if low_open else '['}{'-inf' if low is None else low}, "
                  f"{'inf' if high is None else high}]")
        raise ConfigError(f"{name} must be a number in {bounds}, found {value!r}")
    return float(value)


def user_message(error: BaseException) -> str:
    """The message of `error` without gin's note on the configurable it was raised in."""
    return str(error).split(_GIN_NOTE)[0]


def cli_main(main):
    """Wraps a command's `main(argv, **kwargs)`: a UserError prints `error: <message>` on
    stderr and exits 2; every other exception propagates (traceback). Use as a decorator.
    The keyword arguments are what an entry module passes in (`benchmark/run.py` passes
    the artefact loader: `functools.partial(main, artefact_loader=...)`)."""

    @functools.wraps(main)
    def wrapper(argv, **kwargs):
        from absl import app

        try:
            return main(argv, **kwargs)
        except UserError as error:
            message = user_message(error)
        except app.UsageError as error:           # absl would print the whole usage, exit 1
            message = f"{error} (--help lists the flags)"
        except OSError as error:
            if error.errno not in STORAGE_ERRNOS:
                raise
            message = storage_message(error)
        sys.stdout.flush()
        print(f"error: {message}", file=sys.stderr)
        sys.exit(USER_ERROR_EXIT)

    wrapper.cli_error_policy = True
    return wrapper


def storage_message(error: OSError) -> str:
    """One line for a write that failed for want of space or permission, naming the path.
    Nothing half-written is ever taken as final (files are renamed into place once
    complete; a run resumes from its last complete checkpoint), so rerunning is safe."""
    text = str(error.strerror or error) if error.filename is None else \
        f"{error.strerror}: {error.filename}"
    if error.filename is None and "failed:" in str(error):
        text = str(error).split("] ", 1)[-1]        # atomic.naming_error: names the file
    return (f"{text} (free space, or write somewhere writable; nothing partial was kept "
            "as final, so the same command resumes once it can write)")


#: the flags that ask for a command's help
HELP_FLAGS = ("--help", "-h", "-?", "--helpshort", "--helpfull")


def run_command(main) -> None:
    """`absl.app.run(main)` with the suite's policy where absl has its own: --help (-h,
    --helpshort; --helpfull with absl's flags too) prints the command's docstring and flags
    on stdout and exits 0, and an unknown or malformed flag is one line `error: ...` on
    stderr and exit 2 (absl exits 1 for both). `main` goes through `cli_main`.
    SIGINT is the suite's stop signal (a run keeps its last checkpoint, a study stops its
    runs): a command started in the background by a shell (`cmd &`, nohup) inherits it
    ignored, so it is made to raise KeyboardInterrupt again (its children then start
    with SIGINT at its default, not ignored)."""
    from absl import app, flags

    restore_interrupt()

    def parse(argv):
        asked = [a for a in argv[1:] if a.split("=")[0] in HELP_FLAGS]
        if asked:
            app.usage(shorthelp=not any(a.startswith("--helpfull") for a in asked),
                      writeto_stdout=True)
            sys.exit(0)
        try:
            return flags.FLAGS(argv)
        except flags.Error as error:
            print(f"error: {error} (--help lists the flags)", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)

    app.run(main, flags_parser=parse)


def restore_interrupt() -> None:
    """SIGINT raises KeyboardInterrupt in this process, where it was ignored (inherited
    from a background shell); a handler set on purpose is left alone. Main thread only."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


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
