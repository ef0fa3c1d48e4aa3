"""`python -m pibench_inspect.cli ...` is `pibench ...`."""

import sys

from .main import main

sys.exit(main())
