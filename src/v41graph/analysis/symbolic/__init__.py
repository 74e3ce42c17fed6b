"""Closed forms and what is solved on them: calculus, lambdified sweeps, solvers, questions."""
