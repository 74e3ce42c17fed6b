"""What the benchmarks share: the mixed 256-request batch and a timing loop.

Imported as ``from common import …``: running ``python benchmarks/bench_X.py`` puts this folder
on ``sys.path``.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from v41graph import Plan, Request


def mixed_batch(**policies) -> Plan:
    """256 requests: 32 prefills of about 1K..34K tokens (uneven) and 224 decodes at 2K..~1M context."""
    prefills = [Request.prefill(1024 * (i + 1) + 37 * i) for i in range(32)]
    decodes = [Request.decode(2048 + 4_679 * i) for i in range(224)]
    return Plan(prefills + decodes, label="mixed-256", **policies)


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    """Seconds per call of ``fn`` over ``repeats`` runs (``time.perf_counter``)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def cpu_and_wall(fn: Callable[[], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall-clock and this process's CPU seconds per call of ``fn`` (the machine may be shared)."""
    wall, cpu = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w)
        cpu.append(time.process_time() - c)
    return wall, cpu


def repeats_option(doc: str, default: int, minimum: int, argv: list[str] | None = None) -> int:
    """Parse ``--repeats`` (at least ``minimum``) for a benchmark whose docstring is ``doc``."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=default,
                        help=f"timed runs per measurement (at least {minimum}; default {default})")
    args = parser.parse_args(argv)
    if args.repeats < minimum:
        parser.error(f"--repeats: at least {minimum}, got {args.repeats}")
    return args.repeats
