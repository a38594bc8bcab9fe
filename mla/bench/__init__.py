"""The one timing harness and the one result schema.

    from mla.bench import run_bench, load_results
    df = run_bench(mla.problem.SMOKE, ["torch"], kv_formats=["bf16", "fp8"])   # CPU: mode 'cpu'
    df = load_results("data/measured/h200/*.csv")                             # validated rows

CLI: ``python -m mla bench ...`` (mla/bench/cli.py); method and columns: docs/notes-harness.md.
"""

from .bandwidth import measure_bandwidth
from .harness import expand_configs, iter_bench, parse_assignments, resolve_cases, run_bench
from .report import summary_frame
from .schema import COLUMNS, STATUSES, config_dict, load_results, validate, write_results
from .stats import StoppingRule, geomean, summarize
from .timers import MODES

__all__ = ["COLUMNS", "MODES", "STATUSES", "StoppingRule", "config_dict", "expand_configs", "geomean",
           "iter_bench", "load_results", "measure_bandwidth", "parse_assignments", "resolve_cases",
           "run_bench", "summarize", "summary_frame", "validate", "write_results"]
