"""The sweep's jobs on a Dask distributed cluster (extra ``v41graph[distributed]``).

``run_on_dask(address_or_client, work)`` submits each work item (``sweep_jobs.run_any``, a
top-level function over frozen data) and yields results as they finish; the caller merges them
by job, so the rows do not depend on where or in which order the jobs ran.
"""

from __future__ import annotations

from typing import Any, Iterator

from ...errors import V41Error
from .sweep_jobs import run_any


def client_for(target: Any, timeout: float = 30, command: str = "sweep"):
    """A ``dask.distributed.Client`` for an address (``tcp://host:8786``), or the client given;
    returns it and whether this call owns it (and so closes it)."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise V41Error(f"{command} --scheduler: needs dask.distributed; install v41graph[distributed]") from None
    if isinstance(target, Client):
        return target, False
    try:
        return Client(target, timeout=timeout), True
    except (OSError, TimeoutError) as exc:
        raise V41Error(f"{command} --scheduler: cannot reach {target!r}: {exc}") from None


def run_on_dask(target: Any, work: list) -> Iterator[dict]:
    """Yield ``{job: result}`` for each work item, computed on the cluster."""
    from dask.distributed import as_completed
    client, owned = client_for(target)
    try:
        futures = client.map(run_any, work, pure=False)
        for future in as_completed(futures):
            yield dict(future.result())
    finally:
        if owned:
            client.close()
