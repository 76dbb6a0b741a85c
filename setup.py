"""The package list and where each package lives come from the tree (scripts/layout.py):
everything else about the distribution is in pyproject.toml."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "scripts"))
from layout import packages

found = packages()
setup(packages=sorted(found), package_dir=found)
