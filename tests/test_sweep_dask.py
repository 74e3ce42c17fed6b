"""The same sweep on a Dask LocalCluster gives byte-identical CSV (extra v41graph[distributed])."""

from __future__ import annotations

import pytest

from v41graph import sweep

from helpers import run

distributed = pytest.importorskip("dask.distributed", reason="dask.distributed not installed "
                                  "(extra v41graph[distributed])")

AXES = dict(prompt=[1024, 8192], replay=["off", "bounded"], tp=[8, 7])


@pytest.fixture(scope="module")
def cluster():
    # two workers of one thread each, in this process: no worker start-up cost, same code path
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


def test_local_cluster_rows_equal_local_run(cluster):
    local = sweep(executor="serial", **AXES)
    with distributed.Client(cluster) as client:
        on_dask = sweep(executor=client, **AXES)
    assert on_dask.to_csv() == local.to_csv()
    assert [r["valid"] for r in on_dask.rows] == [True] * 4 + [False] * 4  # tp 8, then tp 7


def test_cli_scheduler_address_writes_the_same_csv(cluster, capsys, tmp_path):
    argv = ["sweep", "--prompt", "1024,8192", "--replay", "off,bounded", "--tp", "8,7"]
    assert run(capsys, *argv, "--workers", "1", "-o", str(tmp_path / "local.csv"))[0] == 0
    status, out, err = run(capsys, *argv, "--scheduler", cluster.scheduler_address, "-o", str(tmp_path / "dask.csv"))
    assert (status, err) == (0, "") and out.startswith("wrote 8 rows")
    assert (tmp_path / "dask.csv").read_bytes() == (tmp_path / "local.csv").read_bytes()


def test_unreachable_scheduler_is_one_error():
    from v41graph.analysis.sweep.sweep_dask import client_for
    from v41graph.errors import V41Error
    with pytest.raises(V41Error, match="sweep --scheduler: cannot reach 'tcp://127.0.0.1:9'"):
        client_for("tcp://127.0.0.1:9", timeout=1)
