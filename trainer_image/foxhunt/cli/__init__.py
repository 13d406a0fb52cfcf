"""The `foxhunt` command: precompute, train, pipeline, evaluate, workflows render, submit.

Exit codes: 0 success; 2 bad input or usage (one line, no traceback); 1 a failure during the run;
130 and 143 a run stopped by SIGINT and SIGTERM (it resumes when the same command runs again).
Building the parser imports nothing heavy: the training modules load when a command runs.
`parser` builds the sub-commands' flags; `commands` runs each sub-command; this module is the entry point.
"""

from __future__ import annotations

import os
import sys
import traceback

from foxhunt import collector, quick_exit, redaction
from foxhunt.cli.parser import build_parser
from foxhunt.config.numerics import pin_cpu_numerics
from foxhunt.errors import EXIT_FAILURE, EXIT_USAGE, FoxhuntError, RunInterrupted
from foxhunt.extras import require_extra

URL_FLAGS = ("pushgateway", "study_storage", "mlflow_uri")
DEBUG_ENV = "FOXHUNT_DEBUG"  # set to 1 for the traceback of an unexpected error


def _flat(value) -> list:
    """A flag's values as one list: repeated flags (`--fxcache`, `--bars` groups) give lists of them."""
    if isinstance(value, list):
        return [v for item in value for v in _flat(item)]
    return [value]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script: every error ends as one line on stderr and an exit code.

    Called with no `argv` (the console script, `python -m foxhunt`) the process is the command's own: its
    long-lived objects leave the garbage collector's generations (`foxhunt.collector`) once imported, and
    the process ends without the interpreter's teardown once nothing is owed (`foxhunt.quick_exit`)."""
    # Before any command imports torch: MKL reads its numeric mode once, at its first call.
    pin_cpu_numerics()
    if argv is None:
        collector.own_process()
    try:
        code = _run_command(argv)
    finally:
        collector.settle()
    if argv is None:
        quick_exit.leave(code)
    return code


def _run_command(argv: list[str] | None) -> int:
    """Parse the command line and run its command; every error as one line on stderr and an exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    name = f"foxhunt {args.command}"
    # Every URL that can carry a password (flags and environment) is known before any line is printed.
    redaction.forget()  # this command's secrets only: an earlier command's must not mask this one's words
    redaction.register_environment()
    values = [v for value in vars(args).values() for v in _flat(value)]
    redaction.register(value for value in values if isinstance(value, str) and "://" in value)
    # The flags whose value is a URL even without a scheme (`user:PW@host:9091`).
    redaction.register(getattr(args, name, None) for name in URL_FLAGS)
    redaction.install_log_filter()
    try:
        if getattr(args, "extra", None):
            require_extra(args.extra, name)
        return args.func(args)
    except RunInterrupted as exc:
        print(f"{name}: interrupted: {redaction.scrub_text(exc)}", file=sys.stderr)
        return exc.exit_code
    except FoxhuntError as exc:
        kind = "error" if exc.exit_code == EXIT_USAGE else "failed"
        print(f"{name}: {kind}: {redaction.scrub_text(exc)}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"{name}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        print(
            f"{name}: unexpected error: {type(exc).__name__}: {redaction.scrub_text(exc)} "
            f"(set {DEBUG_ENV}=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
