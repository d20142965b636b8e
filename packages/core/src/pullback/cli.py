"""What pullback's command-line programs share: one top-level handler for expected errors.

A user's mistake (a bad argument, a missing or unreadable file, a checkpoint that is not there,
a device that is not installed) ends as one line on stderr, ``prog: what went wrong``, and a
non-zero exit status: 2 for a usage error (:class:`UsageError`, as argparse's own errors), 1 for
any other error pullback raises on purpose and for OS and decoding errors. ``--debug`` (see
:func:`add_debug_option`) or ``PULLBACK_DEBUG=1`` shows the traceback instead. Any other
exception is a bug and keeps its traceback. A closed stdout (``pullback plugins --json | head``)
ends the program quietly, as it ends Unix tools.

Example::

    def main(argv=None) -> int:
        parser = ArgumentParser(prog="mytool")
        add_debug_option(parser)
        args = parser.parse_args(argv)
        return run_command(lambda: work(args), "mytool", args.debug)
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from typing import Callable, NoReturn

from .errors import PullbackError

EXIT_ERROR = 1
EXIT_USAGE = 2  # argparse's status for a bad command line
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for Ctrl-C
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports

DEBUG_VARIABLE = "PULLBACK_DEBUG"


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors end with "did you mean" for a mistyped option, subcommand
    or choice (what Python 3.14's ``suggest_on_error`` does, on every Python pullback supports).

    Subcommands made with ``add_subparsers()`` are of this class too, and an option unknown to
    the subcommand that ran is matched against every option of the program.
    """

    def error(self, message: str) -> NoReturn:
        super().error(message + suggestion(message, self))


def suggestion(message: str, parser: argparse.ArgumentParser) -> str:
    """" (did you mean ...?)" for argparse's ``message`` about ``parser``'s command line, or ""."""
    choice = re.search(r"invalid choice: '?([^' ]+)'? \(choose from (.*)\)", message)
    if choice:
        wanted, options = choice[1], [c.strip(" '") for c in choice[2].split(",")]
    else:
        unknown = re.search(r"unrecognized arguments: (.*)", message)
        words = unknown[1].split() if unknown else []
        wanted = next((w.split("=")[0] for w in words if w.startswith("-")), "")
        options = sorted(_option_strings(parser))
    close = difflib.get_close_matches(wanted, options, n=1, cutoff=0.6) if wanted else []
    return f" (did you mean {close[0]}?)" if close else ""


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of ``parser`` and of its subcommands, recursively."""
    found = {o for o in parser._option_string_actions if o.startswith("--")}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found |= _option_strings(sub)
    return found


class UsageError(PullbackError, ValueError):
    """A command-line argument, or the input it names, that the program cannot work with; the
    message says which and what would work."""


def add_debug_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--debug`` (show the traceback of an error) to ``parser``.

    Add it to the main parser and to each subcommand's, so that it may come anywhere on the
    command line; read it with ``getattr(args, "debug", False)``.
    """
    # SUPPRESS: a subcommand that was not given --debug must not reset the main parser's value.
    parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                        help=f"show the full traceback of an error (also {DEBUG_VARIABLE}=1)")


def debug_requested(flag: bool = False) -> bool:
    """``flag`` (the ``--debug`` option), or ``PULLBACK_DEBUG`` set to anything but 0 or empty."""
    return flag or os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")


def run_command(command: Callable[[], int], prog: str, debug: bool = False) -> int:
    """Run ``command`` and return its exit status, turning expected errors into one line on
    stderr and an exit status (see the module's docstring); ``debug`` re-raises them."""
    debug = debug_requested(debug)
    try:
        status = command()
        sys.stdout.flush()  # a reader that went away shows here, not at interpreter exit
        return status
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if debug:
            raise
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (PullbackError, OSError, UnicodeError) as exc:
        if debug:
            raise
        print(f"{prog}: {describe(exc)}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_ERROR


def describe(exc: BaseException) -> str:
    """An exception as one line: its message with line breaks folded, an OS error as
    ``reason: file``."""
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        text = f"{exc.strerror}: {exc.filename}"
    else:
        text = str(exc) or type(exc).__name__
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _silence_stdout() -> None:
    # Python flushes stdout once more at exit, which would raise again and print an "Exception
    # ignored" message: point the descriptor at /dev/null first (the recipe of Python's docs).
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a replaced stdout (tests) has no descriptor
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
