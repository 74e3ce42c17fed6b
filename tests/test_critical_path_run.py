"""The critical path at many points (``PathFinder.run``: chains summed in one numpy call, each distinct
path walked once) is the one at each point alone (``run_one``, plain Python floats): the same bits, the
same path, ties and zero times included."""

from __future__ import annotations

import numpy as np
import pytest

from v41graph import Plan, Request, load_model
from v41graph.passes import compile_graph
from v41graph.passes.critical_path import PathFinder


@pytest.mark.parametrize("plan", [Plan([Request.prefill(4096)], decoder_replay="bounded"),
                                  Plan([Request.decode(4096, copies=8)], tp=8, ep=8)])
def test_many_points_at_once_equal_each_point_alone(plan):
    finder = PathFinder(compile_graph(load_model(), plan).graph)
    assert any(end > i + 1 for i, end, _ in finder.steps)  # chains of several nodes are summed at once
    rng = np.random.default_rng(7)
    n = len(finder.order)
    times = rng.random((n, 40)) * rng.choice([0.0, 1e-6, 1.0, 1e3], size=(n, 40))
    times[rng.random(times.shape) < 0.3] = 0.0  # zero times: ties between inputs, paths that start late
    times[:, 30:] = times[:, :1]  # repeated points share one walked path
    finish, paths = finder.run(times)
    for k in range(times.shape[1]):
        one_finish, one_path = finder.run_one(times[:, k].tolist())
        assert finish[:, k].tolist() == one_finish  # exact: the same additions in the same order
        assert paths[k] == one_path
    assert len({id(p) for p in paths[30:]}) == 1
