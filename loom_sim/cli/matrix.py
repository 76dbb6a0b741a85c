"""Matrix runs on the command line: ``run`` with several configs or targets, or a suite file;
``run --resume``, ``score`` and ``report`` on a matrix's folder.

The matrix pipeline itself lives in :mod:`loom_sim.api.matrix`, where the Python API calls it
too; the commands use it through these names.
"""

from __future__ import annotations

from loom_sim.api.matrix import new_plan, report_matrix, resume_plan, run_matrix, wanted

__all__ = ["new_plan", "report_matrix", "resume_plan", "run_matrix", "wanted"]
