"""``simulate --cost fpm | runtime``: the options of the whole-forward table a simulation's steps are costed from.

Without ``--fpm-table`` the built-in table of the simulated deployment is used: the one whose
identity has the ``--hardware`` GPU, the ``--tp`` degree and the ``--fpm-replay`` decoder replay
policy. Admission is respected as in ``v41graph fpm``: an unadmitted table needs
``--allow-unadmitted``. The estimator is the one leave-one-out chooses per phase unless
``--estimator`` names another. Which table and coster these select is analysis work:
:mod:`v41graph.analysis.serving.step_basis`.
"""

from __future__ import annotations

import argparse

from ..ir.plan import DECODER_REPLAY


def add_fpm_serving_options(p: argparse.ArgumentParser) -> None:
    from ..costs.fpm.estimators import CANDIDATES
    g = p.add_argument_group("FPM step costs (--cost fpm)")
    g.add_argument("--fpm-table", default=None, metavar="TABLE", help="built-in FPM table or folder (default: "
                   "the built-in table of --hardware, --tp and --fpm-replay)")
    g.add_argument("--fpm-replay", choices=DECODER_REPLAY, default="off", help="decoder replay of the default "
                   "table (default: off)")
    g.add_argument("--allow-unadmitted", action="store_true", help="use a table not admitted for prediction")
    g.add_argument("--serving-check", action="store_true", help="instead of --rate/--trace, simulate the "
                   "stand-in of AISimulate's GB300 core scope and print the means beside the observed and "
                   "AISimulate's (with --cost fpm)")
    g.add_argument("--estimator", choices=("chosen",) + CANDIDATES, default="chosen", help="how in-domain "
                   "shapes that are not measured points are valued (default: chosen by leave-one-out)")


__all__ = ["add_fpm_serving_options"]
