"""The same sweep on a Dask cluster (here a LocalCluster of 2 workers) as on this machine.

Run: ``python examples/10_sweep_dask.py`` (needs ``pip install 'v41graph[distributed]'``). With a
real cluster, pass its scheduler address instead: ``sweep(..., executor="tcp://host:8786")``.
"""

from v41graph import sweep

try:
    from dask.distributed import Client, LocalCluster
except ImportError:
    print("skipped: dask.distributed is not installed (pip install 'v41graph[distributed]')")
    raise SystemExit(0)

axes = dict(prompt=[1024, 4096], tp=[1, 8])
with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
        Client(cluster) as client:
    on_dask = sweep(executor=client, **axes)
local = sweep(executor="serial", **axes)
print(f"{len(on_dask)} rows; CSV identical to the local run: {on_dask.to_csv() == local.to_csv()}")
