"""argparse pieces the commands share: value types that refuse a bad number or an empty list while
the command line is parsed (argparse then names the option and exits 2), and the help formatter."""

from __future__ import annotations

import argparse


def _number(conv, text: str, ok, need: str):
    try:
        value = conv(text)
    except ValueError:
        kind = "an integer" if conv is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if not ok(value):  # (NaN fails every comparison, so it is refused too)
        raise argparse.ArgumentTypeError(f"must be {need}, got {text}")
    return value


def positive_int(text: str) -> int:
    return _number(int, text, lambda v: v > 0, "> 0")


def nonneg_int(text: str) -> int:
    return _number(int, text, lambda v: v >= 0, ">= 0")


def positive_float(text: str) -> float:
    return _number(float, text, lambda v: v > 0, "> 0")


def csv_list(text: str) -> list[str]:
    """'a, b,' -> ['a', 'b']; an empty list is refused (it would quietly select nothing)."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of names, got {text!r}")
    return items


def positive_floats(count: int):
    """A type for ``count`` comma-separated numbers > 0 (e.g. ``--bandwidth-gbs READ,COPY``)."""
    def parse(text: str) -> tuple[float, ...]:
        parts = text.split(",")
        if len(parts) != count:
            raise argparse.ArgumentTypeError(f"expected {count} comma-separated numbers, got {text!r}")
        return tuple(positive_float(p.strip()) for p in parts)

    parse.__name__ = f"{count} numbers"  # (argparse's fallback message names the type by it)
    return parse


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" only where it says something: not for None / False / [] (no value, a flag
    off, nothing repeated) and not where the help text already describes its default."""

    def _get_help_string(self, action):
        text, d = action.help or "", action.default
        if d is None or d is False or (isinstance(d, (list, tuple)) and not d) or "default" in text:
            return text  # (identity: a default of 0 or 0.0 is a value to show)
        return super()._get_help_string(action)
