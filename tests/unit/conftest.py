"""The unit tests' own setup: ``support`` (this folder's shared helpers) imports from any
working directory and under any pytest import mode (``--import-mode=importlib`` puts no test
folder on the import path), and in the mutation runs' scratch copies of this folder."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
