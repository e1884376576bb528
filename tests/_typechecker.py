"""The runtime type checker of the test run (`--jaxtyping-packages=dynamics,
tests._typechecker.typechecker` in `pyproject.toml`): every function and class of the engine has
its jaxtyping annotations checked on every call, as Diffrax and Equinox check theirs. An integer
passes where a float is annotated (PEP 484's numeric tower), as Python's own type checkers allow."""

from beartype import BeartypeConf, beartype

typechecker = beartype(conf=BeartypeConf(is_pep484_tower=True))
