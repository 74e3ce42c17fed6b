"""Start-up speed: whole processes, from ``python`` starting to it exiting.

Run: ``python benchmarks/bench_import.py [--repeats R]``. Each case runs R times as a fresh
subprocess; prints the median wall time, the median max RSS (``os.wait4``'s rusage of that one
child), the target and median/target. Asserts nothing (tests never depend on wall-clock time).

Targets (issue 14): ``import v41graph`` ≤ 0.3 s; the ``v41graph`` commands against
AIConfigurator's end-to-end estimate of one configuration, ~0.30 s and ~35 MiB.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import repeats_option


def _cli() -> list[str]:
    """The ``v41graph`` console script beside this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).with_name("v41graph")
    found = str(script) if script.exists() else shutil.which("v41graph")
    return [found] if found else [sys.executable, "-m", "v41graph.cli"]


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, max RSS in MiB) of one run of ``argv``; its output is discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage, not the max over all children
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}:\n{err}")
    return wall, usage.ru_maxrss / 1024  # Linux: ru_maxrss is in KiB


def main() -> None:
    repeats = repeats_option(__doc__, 9, 1)
    cli = _cli()
    cases = [
        ("python -c 'import v41graph'", [sys.executable, "-c", "import v41graph"], 0.30, None),
        ("v41graph cost --prefill 8192", [*cli, "cost", "--prefill", "8192"], 0.30, 35.0),
        ("v41graph cost --prefill 8192 --json", [*cli, "cost", "--prefill", "8192", "--json"], 0.30, 35.0),
        ("v41graph compile --prefill 8192 --json", [*cli, "compile", "--prefill", "8192", "--json"], 0.30, 35.0),
    ]
    print(f"{repeats} runs per case; interpreter {sys.executable}")
    print(f"{'case':<40} {'median s':>9} {'target s':>9} {'ratio':>6} {'RSS MiB':>8} {'target':>7} {'ratio':>6}")
    for name, argv, target_s, target_mib in cases:
        run_once(argv)  # warm the file cache; not counted
        runs = [run_once(argv) for _ in range(repeats)]
        wall = statistics.median(w for w, _ in runs)
        rss = statistics.median(r for _, r in runs)
        mib = f"{target_mib:7.0f} {rss / target_mib:6.2f}" if target_mib else f"{'-':>7} {'-':>6}"
        print(f"{name:<40} {wall:9.3f} {target_s:9.2f} {wall / target_s:6.2f} {rss:8.1f} {mib}")


if __name__ == "__main__":
    main()
