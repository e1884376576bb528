"""Render the pages' TeX as MathML when the site is built, so that it reads offline.

`pymdownx.arithmatex` (generic mode) leaves inline math as `<span class="arithmatex">\\(…\\)</span>`
and display math as `<div class="arithmatex">\\[…\\]</div>`; this hook replaces each with the MathML
that `latex2mathml` produces, which browsers render natively, without a script or a network. A
formula that does not convert, or converts with a TeX command left over, fails the build.
"""

import html
import re

from latex2mathml.converter import convert
from mkdocs.exceptions import PluginError

_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.DOTALL,
)
"""One arithmatex element: its tag and its TeX, inline or display (still HTML-escaped)."""
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
_VERBATIM = re.compile(r"<(pre|code|math|script|style)\b.*?</\1>", re.DOTALL)
"""Elements whose text is shown as written (code) or is no longer TeX (MathML)."""
_RAW_MARKUP = re.compile(r"\$|\\[A-Za-z]+|^\s*\|.*\|\s*$", re.MULTILINE)
"""What a page's text must not show once built: a `$` or a TeX command that was not read as maths,
or a table row that was not read as a table."""


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


def on_page_content(html_text, page, **kwargs):
    """Replace every arithmatex element of a page by its MathML (an mkdocs hook)."""

    def replace(match):
        display = match["display"] is not None
        tex = html.unescape(match["display"] if display else match["inline"])
        try:
            mathml = to_mathml(tex, display)
        except Exception as error:
            raise PluginError(f"{page.file.src_path}: cannot render {tex!r} as MathML: {error}") from error
        return f'<{match["tag"]} class="math">{mathml}</{match["tag"]}>'

    html_text = _MATH.sub(replace, html_text)
    raw = unrendered(html_text)
    if raw:
        raise PluginError(f"{page.file.src_path}: markup shown as text: {raw[:3]}")
    return html_text


def unrendered(html_text: str) -> list[str]:
    """The TeX (a `$`, a `\\command`) and table rows left as text in a built page's HTML, each with
    a little of the text around it; code and MathML are not looked at.

    **Example:**

        >>> unrendered("<p>so $1 - $ rate</p><pre>echo $HOME</pre>")
        ['so $1 - $ rate']
    """
    text = html.unescape(re.sub(r"<[^>]+>", "", _VERBATIM.sub("", html_text)))
    around = (text[max(0, m.start() - 30) : m.end() + 30].strip() for m in _RAW_MARKUP.finditer(text))
    return list(dict.fromkeys(around))
