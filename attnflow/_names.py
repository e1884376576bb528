"""Names looked up before any work: a paper, a level, checks and figures, in a catalog of the
papers (`attnflow._catalog`; `attnflow.papers.catalog_of`), each refusal one line that says what
is known. Imports nothing heavy."""

import difflib
import inspect
import re
from collections.abc import Iterable

_REFERENCE = re.compile(r"\[(`?[^\]`]+`?)\]\[[^\]]*\]")
"""A cross-reference of the documentation, `[`SGD`][]` or `[text][target]`."""


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring as one line of plain text: its line breaks and
    indentation folded, its cross-references reduced to their text (`[`SGD`][]` -> `SGD`)."""
    paragraph = inspect.cleandoc(doc or "").split("\n\n")[0]
    return " ".join(_REFERENCE.sub(r"\1", paragraph).split())


def nearest(name: str, known: Iterable[str]) -> str:
    """A hint for an unknown `name`: the `known` names spelled nearest to it, else those that contain
    it, at most three; empty where none is near.

    **Example:**

        >>> from attnflow.papers import nearest
        >>> nearest("scan_snap_fig66", ["scan_snap_fig6", "scan_snap_fig7", "decision_lists_fig2"])
        '; nearest: scan_snap_fig6, scan_snap_fig7'
        >>> nearest("fig2", ["scan_snap_fig6", "decision_lists_fig2"])
        '; nearest: decision_lists_fig2'
        >>> nearest("zzz", ["scan_snap_fig6"])
        ''
    """
    known = list(known)
    near = difflib.get_close_matches(name, known, n=3) or [k for k in known if name.lower() in k.lower()][:3]
    return f"; nearest: {', '.join(near)}" if near else ""


def paper_named(name: str, found: dict) -> str:
    """`name` when the catalog `found` has a paper of that name.

    **Raises:** `ValueError` listing the known papers, and naming the paper `name` belongs to
    where it is one of its figures or checks.
    """
    papers = found["papers"]
    if name in papers:
        return name
    kind, owners = "figure", [paper for paper, record in papers.items() if name in record["figures"]]
    if not owners:
        kind, owners = "check", [paper for paper, record in papers.items() if name in record["checks"]]
    what = f" (a {kind} of {', '.join(owners)})" if owners else ""
    raise ValueError(f"unknown paper {name!r}{what}; known: {', '.join(papers)}")


def level_named(paper: str, level: str | None, found: dict) -> str:
    """The level `level` of `paper` (default: its first).

    **Raises:** `ValueError` naming the paper's levels when it has no such level.
    """
    record = found["papers"][paper_named(paper, found)]
    level = record["default_level"] if level is None else level
    if level not in record["levels"]:
        raise ValueError(f"{paper} has no level {level!r}; levels: {', '.join(record['levels'])}")
    return level


def refuse_class_name_as_paper(target: str, found: dict) -> None:
    """Refuse `package.module.Class` given where `package.module:Class` is meant.

    **Raises:** `ValueError` when `target` has a dot, no colon, and names no paper.
    """
    if ":" not in target and "." in target and target not in found["papers"]:
        module_name, _, class_name = target.rpartition(".")
        raise ValueError(
            f"unknown paper {target!r}; a class of your own is named with a colon, {module_name}:{class_name}"
        )


def checks_named(names: Iterable[str], among: Iterable[str] | None, found: dict) -> dict[str, list[str]]:
    """The papers that hold the checks called `names`: paper -> the names among its checks.

    **Arguments:**

    - `names`: names of checks, as `attnflow list PAPER` lists them.
    - `among`: the papers to look in (default: every paper).
    - `found`: the catalog to look in (`attnflow.papers.catalog_of`).

    **Returns:** paper -> its checks among `names`, the papers in the order of `among`.

    **Raises:** `ValueError` for a name that no paper among them has (with the nearest names), or
    that several papers have.

    **Example:**

        >>> from attnflow.papers import checks_named
        >>> checks_named(["lemma2_rate"])
        {'scan_snap': ['lemma2_rate']}
    """
    among = list(found["papers"]) if among is None else [paper_named(name, found) for name in among]
    papers_of: dict[str, list[str]] = {}
    for paper, record in found["papers"].items():
        for check in record["checks"]:
            papers_of.setdefault(check, []).append(paper)
    chosen: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        holders = [paper for paper in papers_of.get(name, []) if paper in among]
        if not holders and name in papers_of:
            raise ValueError(f"{name!r} is a check of {papers_of[name][0]}, not of {', '.join(among)}")
        if not holders:
            ours = sorted(check for check, owners in papers_of.items() if set(owners) & set(among))
            raise ValueError(f"no check {name!r}{nearest(name, ours)} (attnflow list PAPER lists them)")
        if len(holders) > 1:
            raise ValueError(f"{', '.join(holders)} each have a check {name!r}: name the paper with --paper")
        chosen.setdefault(holders[0], []).append(name)
    return {paper: chosen[paper] for paper in among if paper in chosen}


def figures_named(names: list[str], found: dict) -> list[str]:
    """`names`, each a figure of some paper (at least one).

    **Raises:** `ValueError` for an unknown name, with the nearest ones, or when none is named.
    """
    if not names:
        raise ValueError("name at least one figure, or pass --all (see --list)")
    known = [figure for record in found["papers"].values() for figure in record["figures"]]
    for name in names:
        if name not in known:
            raise ValueError(
                f"unknown figure {name!r}{nearest(name, known)} (attnflow figures --list lists them)"
            )
    return list(names)
