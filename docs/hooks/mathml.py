"""Render the pages' TeX as MathML when the site is built, so that it reads offline.

`pymdownx.arithmatex` (generic mode) leaves inline math as `<span class="arithmatex">\\(…\\)</span>`
and display math as `<div class="arithmatex">\\[…\\]</div>`; this hook replaces each with the MathML
that `latex2mathml` produces (`attnflow._markup.to_mathml`, as the report of `attnflow reproduce`
does), which browsers render natively, without a script or a network. A formula that does not
convert, or converts with a TeX command left over, fails the build, and so does TeX, a table row or
a list item left as text, or emphasis begun inside a word.
"""

import html
import re

from mkdocs.exceptions import PluginError

from attnflow._markup import to_mathml

_MATH = re.compile(
    r'<(?P<tag>span|div) class="arithmatex">(?:\\\((?P<inline>.*?)\\\)|\\\[(?P<display>.*?)\\\])</(?P=tag)>',
    re.DOTALL,
)
"""One arithmatex element: its tag and its TeX, inline or display (still HTML-escaped)."""
_VERBATIM = re.compile(r"<(pre|code|math|script|style)\b.*?</\1>", re.DOTALL)
"""Elements whose text is shown as written (code) or is no longer TeX (MathML)."""
_RAW_MARKUP = re.compile(r"\$|\\[A-Za-z]+|[\^_]\{|\beta_|^\s*\|.*\|\s*$|^\s*[-*] +\S", re.MULTILINE)
"""What a page's text must not show once built: a `$` or a TeX command that was not read as maths,
ASCII TeX (`x_{T+1}`, `e^{−t}`, `eta_Z`: write it as `$...$` or in Unicode), a table row that was
not read as a table, or a list item that was not read as one (a `- ` line taken into the paragraph
above it: a list needs a blank line after an indented paragraph)."""


_STRAY_EMPHASIS = re.compile(r"[A-Za-z0-9]<(em|strong)>|</(em|strong)>[A-Za-z0-9]")
"""Italics or bold begun or ended inside a word: the underscores or asterisks of a name taken as
emphasis (`class_attention ... x_y`: write names as code)."""


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
    """The TeX (a `$`, a `\\command`, `^{`, `_{`, `eta_`), table rows and list items left as text
    in a built page's HTML, and stray emphasis (italics begun or ended inside a word, as the
    underscores of `class_attention` and `x_y` make them), each with a little of the text around
    it; code and MathML are not looked at.

    **Example:**

        >>> unrendered("<p>so $1 - $ rate</p><pre>echo $HOME</pre>")
        ['so $1 - $ rate']
        >>> unrendered("<p>the levels:\\n- L0, the first</p>")
        ['the levels:\\n- L0, the first']
        >>> unrendered("<p>class<em>attention and x</em>y</p>")
        ['<p>class<em>attention and x</em>y</p>']
    """
    outside = _VERBATIM.sub("", html_text)
    stray = [
        outside[max(0, m.start() - 30) : m.end() + 30].strip() for m in _STRAY_EMPHASIS.finditer(outside)
    ]
    text = html.unescape(re.sub(r"<[^>]+>", "", outside))
    around = (text[max(0, m.start() - 30) : m.end() + 30].strip() for m in _RAW_MARKUP.finditer(text))
    return list(dict.fromkeys([*stray, *around]))
