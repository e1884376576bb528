"""How checks are shown, written once for every output: the table `attnflow verify` prints, its
`--json`, the report of `attnflow reproduce` and the papers' pages of the documentation.

A check is a value ([`theory.Check`][]; its declaration, [`theory.Declaration`][], says what it
claims and how it is measured). This module decides what each output says of it (the counts, what
holds, each failure and deviation with its reason, the predicted value or bound, the tolerance)
and a [`Markup`][] how one output writes it (HTML, Markdown, plain text).
"""

import dataclasses
import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import dynamics
from theory import Check, Declaration, Outcome, Verdict

from ._markup import inline_html


def esc(text) -> str:
    """`text` as HTML text or an attribute value."""
    return html.escape(str(text), quote=True)


def _markdown_text(text) -> str:
    """Plain words in Markdown: the characters Markdown would read as markup, escaped."""
    text = str(text)
    for character in "\\`*_[]":
        text = text.replace(character, "\\" + character)
    return text.replace("<", "&lt;")


@dataclasses.dataclass(frozen=True)
class Markup:
    """How one output writes the parts of a check's summary.

    **Fields:**

    - `text`: plain words, escaped for the output.
    - `rich`: words in the docs' Markdown subset (maths in `$…$`, code in backticks).
    - `code`: a name, set as code.
    - `strong`: words set in bold (already written in this markup).
    - `link`: `link(shown, anchor)`, `shown` (already written) linked to `#anchor` of the same page.
    """

    text: Callable[[str], str]
    rich: Callable[[str], str]
    code: Callable[[str], str]
    strong: Callable[[str], str]
    link: Callable[[str, str], str]


HTML = Markup(
    text=esc,
    rich=inline_html,
    code=lambda name: f"<code>{esc(name)}</code>",
    strong=lambda words: f"<strong>{words}</strong>",
    link=lambda shown, anchor: f"<a href='#{esc(anchor)}'>{shown}</a>",
)
"""The report's markup (maths as MathML, see `attnflow._markup`)."""

MARKDOWN = Markup(
    text=_markdown_text,
    rich=str,
    code=lambda name: f"`{name}`",
    strong=lambda words: f"**{words}**",
    link=lambda shown, anchor: f"[{shown}](#{anchor})",
)
"""The documentation's markup (its pages render `$…$` themselves)."""

TEXT = Markup(text=str, rich=str, code=str, strong=str, link=lambda shown, anchor: shown)
"""The terminal's: the words alone."""

_RESULT = re.compile(
    r"^(?:Theorem|Lemmas?|Proposition|Corollary|Result|Example|Eqn|Figs?\.|Sec\.|Appendix|Stage"
    r"|Algorithm|Conclusion)(?: [0-9A-Z][\w.]*(?:-[\w.]+)?)?"
)
"""The result a claim begins with ("Theorem 4", "Lemma B.8", "Fig. 2", "Stage 1")."""


def result_of(claim: str) -> str:
    """The paper's result a check's claim is about, read from its first words, e.g. `"Theorem 4"`;
    `"Other"` when it names none.

    **Example:**

        >>> result_of(r"Theorem 4(a): snap time $\\propto 1/\\eta_Y$"), result_of("P3: $a(t)$")
        ('Theorem 4', 'Other')
    """
    match = _RESULT.match(claim)
    return match.group(0).rstrip(".") if match else "Other"


def grouped(checks: Iterable[Check]) -> dict[str, list[Check]]:
    """Checks by the result they are about ([`result_of`][]), in the order each result first
    appears."""
    groups: dict[str, list[Check]] = {}
    for c in checks:
        groups.setdefault(result_of(c.claim), []).append(c)
    return groups


def tally(checks: Sequence[Check]) -> dict[Verdict, int]:
    """How many checks came out with each verdict, every verdict counted (0 where none)."""
    return {verdict: sum(c.verdict is verdict for c in checks) for verdict in Verdict}


def outcome_counts(checks: Sequence[Check]) -> str:
    """How the checks came out, in words: `"5 pass, 1 fail (1 tolerance exceeded), 2 expected
    deviation(s)"`; a failure is said to be a tolerance exceeded or a check that did not run."""
    counts = tally(checks)
    failures = [o for o in (Outcome.exceeded, Outcome.not_run) if any(c.outcome is o for c in checks)]
    kinds = ", ".join(f"{sum(c.outcome is o for c in checks)} {o.value}" for o in failures)
    return (
        f"{counts[Verdict.passed]} pass, {counts[Verdict.failed]} fail{f' ({kinds})' if kinds else ''}, "
        f"{counts[Verdict.deviation]} expected deviation(s)"
    )


def headline(checks: Sequence[Check]) -> str:
    """A paper's checks in one line: `"5 of 7 checks pass, 1 fails, 1 deviates as documented"`
    (the failures and deviations named only where there are some)."""
    counts = tally(checks)
    line = f"{counts[Verdict.passed]} of {len(checks)} checks pass"
    if counts[Verdict.failed]:
        line += f", {counts[Verdict.failed]} {'fails' if counts[Verdict.failed] == 1 else 'fail'}"
    if counts[Verdict.deviation]:
        verb = "deviates" if counts[Verdict.deviation] == 1 else "deviate"
        line += f", {counts[Verdict.deviation]} {verb} as documented"
    return line


def holding(checks: Sequence[Check]) -> list[str]:
    """The results (see [`result_of`][]) all of whose checks pass, in order; never `"Other"`."""
    return [
        result
        for result, members in grouped(checks).items()
        if result != "Other" and all(c.verdict is Verdict.passed for c in members)
    ]


def remarks(
    checks: Sequence[Check], markup: Markup, anchor: Callable[[str], str]
) -> list[tuple[Outcome, str]]:
    """One line for each check that did not pass, saying why, in `markup`: a tolerance exceeded
    (the claim, the error and the tolerance), a check that did not run (its error) or a documented
    deviation (the claim and the reason).

    **Arguments:**

    - `checks`: the checks, in the order the lines come.
    - `markup`: the output's [`Markup`][].
    - `anchor`: the anchor of a check's row on the same page, from its name.

    **Returns:** `(outcome, line)` pairs, the outcome for the line's styling.
    """
    lines = []
    for c in checks:
        named = markup.link(markup.code(c.name), anchor(c.name))
        if c.outcome is Outcome.exceeded:
            line = (
                f"{markup.strong('Exceeds its tolerance')}: {named}, {markup.rich(c.claim)} (error "
                f"{c.error:.3g} against tolerance {c.tolerance:.3g})"
            )
        elif c.outcome is Outcome.not_run:
            line = f"{markup.strong('Did not run')}: {named}: {markup.text(c.note)}"
        elif c.outcome is Outcome.deviation:
            line = (
                f"{markup.strong('Deviates, as documented')}: {named}, {markup.rich(c.claim)}. Why: "
                f"{markup.text(_sentence(c.deviation or c.note))}"
            )
        else:
            continue
        lines.append((c.outcome, line))
    return lines


def _sentence(text: str) -> str:
    """`text` ending in a full stop (unless it ends in one already, or in `?` or `!`)."""
    return text if text.endswith((".", "?", "!")) else f"{text}."


def predicted(check: Check) -> str:
    """The predicted value, or the bound it is: `0.5`, `bound ≥ 0.5`."""
    if check.bound is None:
        return f"{check.predicted:.6g}"
    return f"bound {check.bound.sign} {check.predicted:.6g}"


def tolerance(value: float) -> str:
    """A tolerance as every table shows it: `1e-8`, `0.05`, `4`."""
    return f"{value:.6g}".replace("e-0", "e-").replace("e+0", "e+")


def described(
    declaration: Declaration,
    figures: Sequence[str],
    markup: Markup,
    figure_anchor: Callable[[str], str | None],
) -> list[tuple[str, str]]:
    """What a check's declaration says besides its claim, in `markup`: how it is measured
    (`"method"`), what the paper prints (`"printed"`, where declared) and the figures that draw it
    (`"shown"`, where some do).

    **Arguments:**

    - `declaration`: the check's declaration.
    - `figures`: the names of the figures that draw it.
    - `markup`: the output's [`Markup`][].
    - `figure_anchor`: a figure's anchor on the same page from its name, or `None` where the page
      has no such figure (its name is then not linked).

    **Returns:** `(kind, text)` pairs.
    """
    parts = [("method", markup.rich(declaration.method))]
    if declaration.printed:
        parts.append(("printed", f"{markup.strong('The paper prints:')} {markup.rich(declaration.printed)}"))
    if figures:
        parts.append(("shown", f"Drawn in {linked_names(figures, markup, figure_anchor)}."))
    return parts


def linked_names(names: Sequence[str], markup: Markup, anchor: Callable[[str], str | None]) -> str:
    """`names` as code, separated by commas, each linked to `#anchor(name)` where that is not
    `None`."""
    return ", ".join(
        markup.code(name) if anchor(name) is None else markup.link(markup.code(name), anchor(name))
        for name in names
    )


def text_table(checks: Sequence[Check]) -> str:
    """A plain-text table: verdict, paper, name, predicted, simulated, error / tolerance, with the
    paper and check columns as wide as their longest name (no name is cut), then the counts
    ([`outcome_counts`][]) and a line for each check that did not pass ([`remarks`][]).

    A check whose `predicted` is a bound shows, under the predicted and simulated columns, the
    relation it asks of the simulated value instead of the two values, e.g. `0.96239 >= bound 0.5`
    (the verdict says whether it holds within the tolerance).
    """
    paper_width = max([len("paper"), *(len(c.paper) for c in checks)])
    name_width = max([len("check"), *(len(c.name) for c in checks)])
    header = (
        f"{'verdict':<9} {'paper':<{paper_width}} {'check':<{name_width}} {'predicted':>14}"
        f" {'simulated':>14} {'error':>10} {'tol':>9}"
    )
    lines = [header, "-" * len(header)]
    for c in checks:
        if c.bound is None:
            values = f"{c.predicted:>14.5g} {c.simulated:>14.5g}"
        else:
            relation = f"{c.simulated:.5g} {c.bound.relation} bound {c.predicted:.5g}"
            values = f"{relation:>29}"
        lines.append(
            f"{c.verdict.upper():<9} {c.paper:<{paper_width}} {c.name:<{name_width}} {values}"
            f" {c.error:>10.3g} {c.tolerance:>9.2g}"
        )
    lines.append(f"checks: {outcome_counts(checks)}")
    lines += [f"  {line}" for _, line in remarks(checks, TEXT, lambda name: name)]
    return "\n".join(lines)


def write_json(checks: Sequence[Check], path: str | Path, meta: dict) -> Path:
    """Write the checks ([`theory.Check.to_dict`][]) and `meta` (versions, options) to `path` as
    JSON, whole or not at all; [`theory.Check.from_dict`][] reads each check back."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with dynamics.store.atomic_write(path) as f:
        json.dump({"meta": meta, "checks": [c.to_dict() for c in checks]}, f, indent=2)
    return path
