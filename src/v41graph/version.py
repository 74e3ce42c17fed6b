"""The installed version of v41graph, read from the package metadata (``pyproject.toml``).

There is one source of truth for the version: ``[project] version`` in ``pyproject.toml``,
which ``pip install`` writes into the package metadata. ``v41graph.__version__`` and
``v41graph --version`` both read it from there.

>>> from importlib.metadata import version
>>> __version__ == version("v41graph")
True
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("v41graph")
except PackageNotFoundError:  # a source tree on sys.path that was never installed: say so, don't guess
    __version__ = "0+not-installed"
