"""Running a sweep's work items: serially, in a local process pool, or on a Dask cluster, with a progress bar on
a terminal and Ctrl-C stopping the workers at once; the rows do not depend on the executor."""

from __future__ import annotations

import os
import sys
from typing import Any

from ...algebra import as_int
from .sweep_jobs import Job, SweepError, run_any


def _progress(total: int, enabled: bool | None):
    """A tqdm bar on a terminal (stderr a TTY); disabled (tqdm's own no-op) on a pipe or with --json."""
    from tqdm import tqdm
    if enabled is None:
        enabled = sys.stderr.isatty()
    return tqdm(total=total, desc="sweep", unit="job", file=sys.stderr, disable=not enabled)


def _parent_handles_sigint() -> None:
    """In each worker: Ctrl-C is the parent's to handle (one line, no traceback per worker)."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop(pool) -> None:
    """Drop the queued jobs and end the workers now: ``shutdown`` alone waits for the running ones."""
    workers = list((getattr(pool, "_processes", None) or {}).values())  # no public way before Python 3.14
    pool.shutdown(wait=False, cancel_futures=True)  # (which forgets the workers: listed first)
    for proc in workers:
        proc.terminate()


def execute(work: list, executor: Any = "local", *, workers: int | None = None,
            progress: bool | None = None) -> dict[Job, dict]:
    """Run the work items and return each single-length job's result."""
    if workers is not None and (as_int(workers) is None or workers < 1):  # 0 would mean "one per CPU"
        raise SweepError(f"sweep workers: must be an integer >= 1 (or None: one per CPU), got {workers!r}")
    bar = _progress(len(work), progress)
    results: dict[Job, dict] = {}
    try:
        if executor == "serial" or (executor == "local" and (workers == 1 or len(work) <= 1)):
            for item in work:
                results.update(run_any(item))
                bar.update()
        elif executor == "local":
            from concurrent.futures import ProcessPoolExecutor, as_completed
            pool = ProcessPoolExecutor(max_workers=workers or os.cpu_count(), initializer=_parent_handles_sigint)
            try:
                for done in as_completed([pool.submit(run_any, item) for item in work]):
                    results.update(done.result())
                    bar.update()
            except BaseException:  # Ctrl-C or a failed job: stop now, not after the queued jobs
                _stop(pool)
                raise
            pool.shutdown()
        else:
            from .sweep_dask import run_on_dask
            for part in run_on_dask(executor, work):
                results.update(part)
                bar.update()
    finally:
        bar.close()
    return results
