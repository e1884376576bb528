"""`attnflow list` and `attnflow figures --list`, printed from the catalog of the papers
(`attnflow._catalog`): for the papers, nothing is imported."""

import textwrap

from ._names import paper_named


def list_papers(found: dict) -> None:
    """Every paper: its title, levels, number of checks, figures and data option."""
    for name, record in found["papers"].items():
        print(f"{name}: {record['title']}")
        print(f"  levels: {', '.join(record['levels'])} (default {record['default_level']})")
        print(f"  checks: {len(record['checks'])}; figures: {', '.join(record['figures'])}")
        if record["data"] is not None:
            print(f"  --data: {record['data']}")


def list_paper(name: str, found: dict) -> None:
    """Every level of paper `name` with its settings, then its checks with their claims and its
    figures.

    **Raises:** `ValueError` when there is no such paper.
    """
    record = found["papers"][paper_named(name, found)]
    for level, level_of in record["levels"].items():
        _print_level(level, level_of)
    print("checks (attnflow verify --check NAME), each with its claim:")
    for check, claim in record["checks"].items():
        print(f"  {check}: {claim}")
    print("figures (attnflow figures NAME):")
    for figure, summary in record["figures"].items():
        print(f"  {figure}: {textwrap.shorten(summary, 110, placeholder=' ...')}")


def list_class(target: str) -> None:
    """The settings of a user's class, `package.module:ClassName` (imported: the command line
    sets up JAX first).

    **Raises:** `ValueError` from `attnflow.papers.load_simulation`.
    """
    from .papers import level_record, load_simulation

    _print_level(target, level_record(load_simulation(target)))


def list_figures(found: dict) -> None:
    """Every figure's name, one a line, in the papers' order."""
    print("\n".join(figure for record in found["papers"].values() for figure in record["figures"]))


def _print_level(level: str, record: dict) -> None:
    print(f"{level}: {record['path']}\n  {record['summary']}")
    for field in record["fields"]:
        traced = ", traced" if field["traced"] else ""
        print(
            f"    {field['name']} = {field['default']}  ({field['type']}{traced}; {field['allowed']})  "
            f"{field['doc']}"
        )
    if record["small"]:
        print(f"  a first try (seconds): {' '.join(f'--set {k}={v}' for k, v in record['small'].items())}")
