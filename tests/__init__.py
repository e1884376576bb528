"""The test suite. `_typechecker` is imported here so that the test run's type checker is found as
`tests._typechecker.typechecker` (see `pyproject.toml`)."""

from . import _typechecker as _typechecker
