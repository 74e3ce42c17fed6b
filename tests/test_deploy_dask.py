"""deploy --scheduler: the search priced on a Dask cluster gives the local answer, JSON byte for byte
(extra v41graph[distributed])."""

from __future__ import annotations

import json

import pytest

from v41graph import load_model
from v41graph.analysis.deploy.deploy_dask import group
from v41graph.analysis.deploy.deploy_search import Question, search
from v41graph.costs.hardware import load_hardware

distributed = pytest.importorskip("dask.distributed", reason="dask.distributed not installed "
                                  "(extra v41graph[distributed])")

Q = Question(isl=2000, osl=100, ttft_s=1.0, tpot_s=0.05, gpus=4, requests=40)
# V4.1 on 4 GPUs fits only with Engram on host, which no SGLang flag expresses: admitted here
SMALL = dict(caps=(32, 128), chunks=(8192,), check=2, top=3, allow_unlaunchable=True)


@pytest.fixture(scope="module")
def cluster():
    # two workers of one thread each, in this process: no worker start-up cost, same code path
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        yield c


def test_dask_search_equals_the_local_search(cluster):
    m, h = load_model("deepseek-v4.1-flash"), load_hardware("h200_sxm")
    local = search(m, h, Q, axes={"verify": (0,)}, **SMALL)
    with distributed.Client(cluster) as client:
        ticks = []
        remote = search(m, h, Q, axes={"verify": (0,)}, scheduler=client, progress=ticks.append, **SMALL)
    assert json.dumps(remote, sort_keys=True) == json.dumps(local, sort_keys=True)
    assert sum(ticks) == len(local["candidates"])  # the bar counts every candidate once
    assert local["picks"]["aggregated"] is not None and local["step_shapes_compiled"] > 0


def test_groups_keep_each_candidate_once_by_the_costers_it_needs():
    from v41graph.analysis.deploy.deploy_space import EngineMapping, Instance
    a, b = Instance(EngineMapping(2, 1, 2), 32, 8192), Instance(EngineMapping(4, 1, 4), 32, 8192)
    items = [(0, "aggregated", (a, 1)), (1, "disaggregated", (a, 1, b, 1)), (2, "aggregated", (a, 2)),
             (3, "aggregated", (b, 1))]
    assert [[i for i, _, _ in g] for g in group(items)] == [[0, 2], [1], [3]]


def test_unreachable_scheduler_names_the_command_and_address():
    from v41graph.analysis.sweep.sweep_dask import client_for
    from v41graph.errors import V41Error
    with pytest.raises(V41Error, match=r"^deploy --scheduler: cannot reach 'tcp://127\.0\.0\.1:1'"):
        client_for("tcp://127.0.0.1:1", timeout=1, command="deploy")
