"""Fixtures shared by the test modules, and the fresh session that keeps them independent of order.

Every test runs in a fresh :class:`v41graph.session.Session`: no shape memo filled, and the op,
pass, fusion-rule, sharding-row, hardware and plugin registries holding only what the package itself
provides. So no test passes (or fails) because of what another test compiled or registered before
it, in any order — nothing is reset, each test simply starts in a session of its own;
``tests/test_order_independence.py`` checks that each kind of pollution stays in its test.
"""

from __future__ import annotations

import pytest

from v41graph import load_model
from v41graph.session import Session


@pytest.fixture(autouse=True)
def fresh_session():
    """Each test runs in a fresh session (see the module docstring); a test may ask for it by name."""
    with Session() as fresh:
        yield fresh


@pytest.fixture(scope="session")
def flash():
    """The embedded DeepSeek-V4.1-Flash model."""
    return load_model()


@pytest.fixture(scope="session")
def v4_flash():
    """The DeepSeek-V4-Flash baseline."""
    return load_model("deepseek-v4-flash")
