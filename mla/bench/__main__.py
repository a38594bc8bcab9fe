"""``python -m mla.bench info|bench|report``: the same commands as ``python -m mla``, usable when
another command module of the top-level CLI fails to import (the campaign script falls back to it)."""

import argparse
import sys

from .cli import register


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m mla.bench", description="MLA decode harness")
    register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ValueError as e:  # a bad request: say what, without a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
