"""The site's build refuses markup its pages would show as text: TeX outside maths, a table row not
read as a table, a list swallowed into a paragraph, emphasis begun inside a word, a code span
inside maths."""

import pytest

from tests.helpers import load_file

pytest.importorskip("latex2mathml")  # the docs extra


def _mathml_hook():
    return load_file("docs/hooks/mathml.py")


@pytest.mark.parametrize(
    "html",
    [
        "<p>so $1 - $ rate</p>",
        "<p>$$\n\\frac{dW}{dt} = 0\n$$</p>",
        "<p>a \\lVert W \\rVert norm</p>",
        "<p>| `fig7_attention_freezes` | a claim | 0 | paper |</p>",
        "<p>the query x_{T+1} of each sample</p>",
        "<p>so y² = e^{−2t} there</p>",
        "<p>the ratio eta_Z/eta_Y of the rates</p>",
        "<p>Does it run on a GPU? Yes:\n- on one device\n- on several</p>",
        "<p>the class<em>attention of each x</em>y</p>",
        "<p>the <strong>bold</strong>s of a word</p>",
    ],
)
def test_markup_left_as_text_is_found(html):
    assert _mathml_hook().unrendered(html)


@pytest.mark.parametrize(
    "html",
    [
        "<p>a price of 5 in <code>$HOME</code></p>",
        "<pre><code>echo $OUT | tee log</code></pre>",
        '<p>the norm <span class="math"><math><mi>W</mi></math></span> grows</p>',
        "<table><tr><td>a</td><td>b</td></tr></table>",
        "<p>the field <code>x_{T+1}</code> and Adam's beta_1</p>",
        "<p>an <em>emphasised</em> word, <strong>bold</strong>, and (<em>a</em>)</p>",
        "<ul>\n<li>a list item</li>\n</ul>",
    ],
)
def test_code_maths_and_tables_are_not_flagged(html):
    assert _mathml_hook().unrendered(html) == []


def test_a_code_span_inside_maths_is_refused():
    with pytest.raises(ValueError, match="code span inside maths"):
        _mathml_hook().to_mathml(r"x \quad \text{(Eqn 33, `h_discrete`)}", display=True)
    assert "<math" in _mathml_hook().to_mathml(r"x \quad \mathtt{h\_discrete}", display=True)
