"""Questions answered by solving: the public names for analysts.

The longest context that fits per GPU (``max_context``), the batch at which a decode step turns
compute-bound (``compute_bound_batch``), the crossover length of two plans (``crossover``),
d TTFT / d N by op family (``ttft_by_op_rate``, ``by_op``), d time / d bandwidth
(``sensitivity``); each returns an ``Answer`` that says exact or numeric, with its bracket.
``right_derivative`` differentiates a closed form with ``Min`` / ``Max``; ``graph_diff`` compares
two graphs node by node (``analysis/symbolic/solvers.py``, ``analysis/symbolic/calculus.py``, ``analysis/diff.py``).

>>> from v41graph.symbols import N
>>> import sympy
>>> right_derivative(sympy.Min(N, 128), N)
Piecewise((1, N < 128), (0, True))
"""

from .analysis.symbolic.calculus import right_derivative
from .analysis.diff import graph_diff
from .analysis.symbolic.solvers import (Answer, by_op, compute_bound_batch, crossover, max_context, sensitivity,
                                        ttft_by_op_rate)

__all__ = ["Answer", "by_op", "compute_bound_batch", "crossover", "graph_diff", "max_context", "right_derivative",
           "sensitivity", "ttft_by_op_rate"]
