"""The package's former Inspect entry point, kept for installs whose metadata still names it
(made before the entry point moved out of the package, issue 27): it registers what the entry
point registers. A fresh install (`pip install -e .`) names `pibench_inspect_entry` instead,
which imports nothing of the package in other tasks' runs; this module, being inside the
package, imports the package in every Inspect run.
"""

import pibench_inspect_entry  # noqa: F401
