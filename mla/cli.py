"""``python -m mla <command>``: info, bench, report (mla.bench.cli); smoke, reproduce (mla.commands);
isa, accuracy, timeline (mla.analysis); submission; doctor. ``python -m mla <command> --help`` says more.

Each command module registers its own subparser (``register(subparsers)``) so the CLI stays a thin
layer on top of the package. A bad request (ValueError) or a file that cannot be read or written
(OSError) is one line on stderr and exit status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# modules that add subcommands: each defines register(subparsers) and sets func on its parser
_COMMAND_MODULES = ("mla.commands", "mla.bench.cli", "mla.analysis.isa_cli", "mla.analysis.accuracy",
                    "mla.submission", "mla.doctor",  # issue 11: leaderboard export, machine doctor
                    "mla.analysis.timeline")  # the program timeline (scripts/probes/timeline_probe.py's CSV)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mla", description="MLA decode lab")
    sub = p.add_subparsers(dest="command", required=True)
    for mod in _COMMAND_MODULES:
        importlib.import_module(mod).register(sub)
    return p


def main(argv=None) -> int:
    from .backends import BackendUnavailable

    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, BackendUnavailable, OSError) as e:  # bad arguments or inputs, a machine that cannot,
        print(f"error: {e}", file=sys.stderr)             # a path that cannot be written: one line, no traceback
        return 2


if __name__ == "__main__":
    sys.exit(main())
