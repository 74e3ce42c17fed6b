"""The ``v41graph`` command line.

Each subcommand prints text, or with ``--json`` a machine-readable object. Bad input exits
with status 2 and one line on stderr naming the problem; never a traceback. Ctrl-C exits with
status 130 and the line ``v41graph: interrupted``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from ..errors import V41Error
from ..collector import frozen_shapes
from ..version import __version__
from .shared import CliError  # noqa: F401  (re-exported: the CLI's one error)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """Every option's default in ``--help``: argparse's own ``(default: …)`` where the value reads
    well, the help text's own wording where it says one already, none for flags and "no value"."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if isinstance(action, argparse._StoreTrueAction) and "(default" not in text:
            return f"{text} (default: off)"
        if "(default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # one line, exit 2, no usage dump
        raise CliError(f"{self.prog}: {message}")


#: ``v41graph [options]`` with no subcommand is ``v41graph report [options]``
DEFAULT_COMMAND = "report"


def build_parser() -> argparse.ArgumentParser:
    # the commands' modules load here, inside main's try: a Ctrl-C while they load is one line too
    from . import compare, plot, sweep
    from .ask import add_ask_parser
    from .cost_commands import add_cost_parsers
    from .deploy import add_deploy_parser
    from .fpm import add_fpm_parser
    from .graph_commands import add_graph_parsers
    from .model_commands import add_model_parsers
    from .serving import add_serving_parsers
    parser = _Parser(prog="v41graph", description="Dataflow graph compiler with cost passes for DeepSeek-V4.1. "
                     f"With no command, `v41graph [options]` runs `v41graph {DEFAULT_COMMAND} [options]`.")
    parser.add_argument("--version", action="version", version=__version__,
                        help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    common = _Parser(add_help=False)
    common.add_argument("--model", default=None, help="built-in model name or path to a config.json "
                        "(default: deepseek-v4.1-flash)")
    common.add_argument("--json", action="store_true", help="machine-readable output")
    add_model_parsers(sub, common)
    add_graph_parsers(sub, common)
    add_cost_parsers(sub, common)
    add_fpm_parser(sub, common)
    add_ask_parser(sub, common)
    add_serving_parsers(sub, common)
    add_deploy_parser(sub, common)
    from . import dspark, engram
    engram.register(sub, common)
    dspark.register(sub, common)
    for register in (sweep.add_sweep_parser, compare.add_compare_parser, plot.add_plot_parser):
        register(sub, _Parser)
    return parser


def script() -> None:
    """The ``v41graph`` console script (and ``python -m v41graph.cli``): :func:`main` in a process that ends with
    the command, so the command's kept shapes are not handed back to the collector first (``frozen_shapes``'
    ``hand_back``); exits with main's status."""
    sys.exit(main(process_ends=True))


def main(argv: Sequence[str] | None = None, *, process_ends: bool = False) -> int:
    """The command line as a function (``argv``: the arguments, default ``sys.argv[1:]``); returns the exit status.
    ``process_ends``: the process exits right after (:func:`script`)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = [DEFAULT_COMMAND, *argv]  # `v41graph --json` is `v41graph report --json`
    try:
        args = build_parser().parse_args(argv)
        # this process is the command's: its kept shapes leave the collector's scans
        with frozen_shapes(hand_back=not process_ends):
            args.func(args)
    except V41Error as exc:
        print(f"v41graph: error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help and --version print and exit 0
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:  # `v41graph layout | head` is fine
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line and the shell's 128 + SIGINT; an output folder is left as it was
        print("v41graph: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # an output folder or file that cannot be written
        print(f"v41graph: error: {exc.strerror or exc}: {exc.filename!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    script()
