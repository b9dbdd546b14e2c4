"""Entry points of the deployed bundle (functions-framework ``--target``).

Each deployed function names one of these; they are thin wrappers in ``functions/``.
Importing this module imports no model SDK: that happens on first model use.
"""

from functions.approve import approve
from functions.goals import goals
from functions.integrations import integrations
from functions.resume import resume
from functions.run import run
from functions.runs import runs
from functions.stream import stream

__all__ = ["approve", "goals", "integrations", "resume", "run", "runs", "stream"]
