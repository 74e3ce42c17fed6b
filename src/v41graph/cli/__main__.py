"""``python -m v41graph.cli``."""

import sys

from .main import main

sys.exit(main())
