"""Text written in the docs' Markdown subset (maths in `$…$`, code in backticks), as HTML that
reads offline: the maths as MathML, which browsers render natively, without a script or a network.
The site's build and the report of `attnflow reproduce` render claims and captions with it.

MathML needs `latex2mathml` (the `docs` extra); without it, [`inline_html`][] shows the TeX as
code.
"""

import html
import re

_OPERATOR_NAME = re.compile(r"\\operatorname\*?\{")
"""`\\operatorname{…}`, which `latex2mathml` sets in italics: set upright as `\\mathrm{…}`."""
_ALIGNED = re.compile(r"\\begin\{aligned\}(?P<body>.*?)\\end\{aligned\}", re.DOTALL)
"""An `aligned` environment, which `latex2mathml` does not know: set as an `array` whose columns
alternate right and left alignment, as `aligned` does."""
_MATRIX_OPEN = re.compile(r"<mo>(&#x0005B;|&#x00028;|&#x0007C;)</mo><mtable")
_MATRIX_CLOSE = re.compile(r"</mtable><mo>(&#x0005D;|&#x00029;|&#x0007C;)</mo>")
"""The brackets `latex2mathml` puts around a matrix (`bmatrix`, `pmatrix`, `vmatrix`), which a
browser then draws at the text's height: marked stretchy, so that they span the matrix."""
_LEFTOVER = re.compile(r"\\[A-Za-z]+")
"""A TeX command that `latex2mathml` did not translate."""
_INLINE = re.compile(r"`(?P<code>[^`]+)`|\$(?P<tex>[^$]+)\$")
"""An inline code span or an inline formula."""


def _as_array(match: re.Match) -> str:
    body = match["body"]
    columns = 1 + max(row.count("&") for row in body.split("\\\\"))
    alignment = ("rl" * columns)[:columns]
    return f"\\begin{{array}}{{{alignment}}}{body}\\end{{array}}"


def to_mathml(tex: str, display: bool) -> str:
    """The MathML of one formula.

    **Arguments:**

    - `tex`: the formula's TeX, without delimiters.
    - `display`: a display (block) formula rather than an inline one.

    **Returns:**

    The `<math>` element.

    **Raises:**

    `ValueError` when the formula does not convert, or a TeX command, an `&` or a backtick is left
    in the output.
    """
    tex = _ALIGNED.sub(_as_array, _OPERATOR_NAME.sub(r"\\mathrm{", tex.strip()))
    from latex2mathml.converter import convert

    mathml = convert(tex, display="block" if display else "inline")
    leftover = _LEFTOVER.findall(mathml)
    if leftover:
        raise ValueError(f"untranslated TeX {sorted(set(leftover))}")
    mathml = _MATRIX_OPEN.sub(r'<mo stretchy="true" fence="true" form="prefix">\1</mo><mtable', mathml)
    mathml = _MATRIX_CLOSE.sub(r'</mtable><mo stretchy="true" fence="true" form="postfix">\1</mo>', mathml)
    if "`" in mathml:
        raise ValueError("a code span inside maths: write \\mathtt{…}")
    if "<mi>&</mi>" in mathml:
        raise ValueError("an alignment `&` outside an environment that aligns")
    return mathml


def can_render_maths() -> bool:
    """Whether `latex2mathml` is installed, so that [`to_mathml`][] works."""
    try:
        import latex2mathml  # noqa: F401
    except ImportError:
        return False
    return True


def inline_html(text: str) -> str:
    """One line of the Markdown subset as HTML: `$…$` as MathML (as TeX in code where it does not
    convert, or without `latex2mathml`), backticks as code, the rest escaped.

    **Example:**

        >>> inline_html("see `lemma1` for <this>")
        'see <code>lemma1</code> for &lt;this&gt;'
    """
    parts, at = [], 0
    for match in _INLINE.finditer(text):
        parts.append(html.escape(text[at : match.start()]))
        if match["code"] is not None:
            parts.append(f"<code>{html.escape(match['code'])}</code>")
        else:
            parts.append(_formula(match["tex"]))
        at = match.end()
    parts.append(html.escape(text[at:]))
    return "".join(parts)


def _formula(tex: str) -> str:
    """An inline formula as MathML, or as its TeX in code where that cannot be made."""
    try:
        return to_mathml(tex, display=False)
    except Exception:  # no latex2mathml, or TeX it cannot convert: the report still shows it
        return f"<code>${html.escape(tex)}$</code>"
