"""The page of `attnflow reproduce`: what made it, a verdict summary per paper, the figures with
their captions, and the checks grouped by the result they are about."""

import html
import re

import matplotlib.pyplot as plt
import pytest

import figures
import tasks
import theory
from attnflow import _provenance
from attnflow._markup import can_render_maths
from attnflow._render import MARKDOWN, TEXT, outcome_counts, remarks, result_of, text_table
from attnflow._report import index_page
from attnflow.papers import Paper, papers
from tests.test_cli import _Still


@theory.claim(
    r"Theorem 1: $x_t \to 1$",
    method="the last of 10 steps: absolute error",
    tolerance=1e-6,
    printed="Table 1: “$x_{10}$ = 1.000” (the same 10 steps)",
)
def converges():
    return theory.Measured(predicted=1.0, simulated=1.0, error=0.0)


@theory.claim("Theorem 1: the rate is $1/t$", method="fit on the last decade: relative error", tolerance=0.1)
def rate():
    return theory.Measured(predicted=1.0, simulated=1.5, error=0.5)


@theory.claim(
    "Lemma 2: the norm stays below 2",
    method="largest norm over the run",
    tolerance=0.0,
    bound="upper",
    expected_deviation="the step is outside the lemma's range",
)
def norm_bounded():
    return theory.Measured(predicted=2.0, simulated=2.5, error=0.5)


@figures.caption("Fig. 1: $x_t$ against $t$. Look for the curve reaching 1.", checks=("converges", "rate"))
def fig1(out_dir, full):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    return figures.save_figure(fig, out_dir, "toy_fig1", data={}, config={"full": full})


@pytest.fixture
def page(tmp_path, monkeypatch):
    draws = figures.named_figures("figures.toy", [fig1])
    info = tasks.PaperInfo("toy", "A toy paper", {"still": _Still}, label="Toy")
    monkeypatch.setitem(papers(), "toy", Paper(info, (converges, rate, norm_bounded), draws))
    checks = {"toy": [converges(), rate(), norm_bounded()]}
    files = {"toy": {"toy_fig1": fig1(tmp_path / "figures", False)}}
    metadata = _provenance.provenance() | {"options": {"full": False, "jobs": 2}, "wall_seconds": 12.3}
    return index_page(checks, files, tmp_path, metadata)


def _text(page_html: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<math.*?</math>", " MATH ", page_html, flags=re.S)))


def test_the_summary_colours_only_the_verdicts_that_occur(page):
    row = re.search(r"<tr><td><a href='#toy'>Toy</a></td>.*?</tr>", page).group(0)
    assert "<td class='num pass'>1</td><td class='num fail'>1</td><td class='num deviation'>1</td>" in row
    only_passes = index_page({"toy": [converges()]}, {"toy": {}}, None, {})
    assert "<td class='num pass'>1</td><td class='num'>0</td><td class='num'>0</td>" in only_passes


def test_the_verdict_summary_says_what_holds_fails_and_deviates_and_why(page):
    summary = _text(re.search(r"<ul class='verdicts'>.*?</ul>", page).group(0))
    assert "1 of 3 checks pass, 1 fails, 1 deviates as documented." in summary
    assert "Exceeds its tolerance : rate" in " ".join(summary.split())
    assert "Deviates, as documented : norm_bounded" in " ".join(summary.split())
    assert "Why: the step is outside the lemma's range" in summary
    assert "Every check holds for" not in summary  # Theorem 1 has a failure, Lemma 2 a deviation


def test_the_terminal_the_report_and_the_documentation_say_the_same_of_each_check_that_did_not_pass(page):
    checks = [converges(), rate(), norm_bounded()]
    said = [line for _, line in remarks(checks, TEXT, str)]
    assert said == [
        "Exceeds its tolerance: rate, Theorem 1: the rate is $1/t$ (error 0.5 against tolerance 0.1)",
        "Deviates, as documented: norm_bounded, Lemma 2: the norm stays below 2. Why: the step is "
        "outside the lemma's range.",
    ]
    assert text_table(checks).splitlines()[-2:] == [f"  {line}" for line in said]
    in_markdown = [re.sub(r"\*\*|`|\]\(#[^)]*\)|\[", "", line) for _, line in remarks(checks, MARKDOWN, str)]
    assert in_markdown == said
    report = re.search(r"<ul class='verdicts'>.*?</ul>", page).group(0)
    in_report = [_words(line) for line in re.findall(r"<li class='[a-z]+'>(.*?)</li>", report)]
    maths = "<math></math>" if can_render_maths() else "$1/t$"  # without the docs extra, the TeX as written
    assert in_report == [_words(line.replace("$1/t$", maths)) for line in said]


def _words(html_text: str) -> str:
    """What a reader of a line of the page sees, spacing aside."""
    return re.sub(r"\s+(?=[,.:;)])", "", " ".join(_text(html_text).split()))


def test_the_checks_are_grouped_by_result_with_how_they_are_measured(page):
    table = re.search(r"<table class='checks'>.*?</table>", page, flags=re.S).group(0)
    groups = re.findall(r"<tr class='group'><th colspan='8'>([^<]+)</th>", table)
    assert groups == ["Theorem 1", "Lemma 2"]
    assert "fit on the last decade: relative error" in table
    assert "bound ≤ 2" in table


def test_the_figures_have_their_captions_and_the_header_what_made_them(page):
    assert "<img src='figures/toy_fig1.png'" in page
    assert "Look for the curve reaching 1." in _text(page)
    header = _text(re.search(r"<table class='made-by'>.*?</table>", page).group(0))
    for fact in ("quick", "12 s with 2 worker(s)", "cores", "XLA flags", "jax "):
        assert fact in header


def test_maths_is_rendered_when_latex2mathml_is_installed(page):
    pytest.importorskip("latex2mathml")
    assert "<math" in page and "$" not in _text(page).split("How this was made")[0]


@pytest.mark.parametrize(
    "claim, result",
    [
        ("Theorem 4(a): snap", "Theorem 4"),
        ("Lemma B.8: closed form", "Lemma B.8"),
        ("Lemmas C.5-C.6: one step", "Lemmas C.5-C.6"),
        ("Figs. 2, 4: floor", "Figs. 2"),
        ("Fig. 10: entropy", "Fig. 10"),
        ("Eqn 14, scanning phase", "Eqn 14"),
        ("Stage 1 needs poly($T$) samples", "Stage 1"),
        ("P3: $a(t)$", "Other"),
    ],
)
def test_a_claim_is_grouped_under_the_result_it_begins_with(claim, result):
    assert result_of(claim) == result


def test_with_docs_each_check_and_figure_links_to_its_entry_in_the_documentation(tmp_path, monkeypatch):
    draws = figures.named_figures("figures.toy", [fig1])
    info = tasks.PaperInfo("toy", "A toy paper", {"still": _Still}, label="Toy")
    monkeypatch.setitem(papers(), "toy", Paper(info, (converges,), draws))
    files = {"toy": {"toy_fig1": fig1(tmp_path / "figures", False)}}
    linked = index_page({"toy": [converges()]}, files, tmp_path, {}, "../site")
    assert "href='../site/papers/toy.html#check-converges'" in linked
    assert "href='../site/papers/toy.html#figure-toy_fig1'" in linked
    assert "in the documentation" not in index_page({"toy": [converges()]}, files, tmp_path, {})


def test_docs_given_as_a_folder_is_linked_relative_to_the_report(tmp_path, capsys):
    from attnflow._commands import _docs_base

    (tmp_path / "site" / "papers").mkdir(parents=True)
    assert _docs_base(str(tmp_path / "site"), tmp_path / "results") == "../site"
    assert _docs_base("https://example.org/attnflow/", tmp_path) == "https://example.org/attnflow"
    assert _docs_base(str(tmp_path / "nothing"), tmp_path / "results") == "../nothing"
    assert "holds no built site yet" in capsys.readouterr().out


def test_the_checks_can_be_filtered_by_verdict_and_text_and_each_paper_has_its_contents(page):
    """Every check's row says its verdict for the page's filter, which offers the three verdicts
    and a text box; the summary links to each paper's figures and checks."""
    rows = re.findall(r"<tr id='toy-(\w+)' class='check' data-verdict='(\w+)'>", page)
    assert rows == [("converges", "pass"), ("rate", "fail"), ("norm_bounded", "deviation")]
    form = page[page.index('<form class="filter"') : page.index("</form>")]
    assert [v for v in re.findall(r"value=\"(\w+)\" checked", form)] == ["pass", "fail", "deviation"]
    assert 'type="search"' in form
    assert "href='#toy-figures'" in page and "id='toy-figures'" in page
    assert "href='#toy-checks'" in page and "id='toy-checks'" in page


def test_each_check_links_to_the_figures_that_draw_it_and_each_figure_to_its_checks(page):
    converges_row = page.split("id='toy-converges'", 1)[1].split("</tr>", 1)[0]
    assert "Drawn in <a href='#toy_fig1'><code>toy_fig1</code></a>" in converges_row
    bounded_row = page.split("id='toy-norm_bounded'", 1)[1].split("</tr>", 1)[0]
    assert "Drawn in" not in bounded_row
    figure = page.split("<figure id='toy_fig1'>", 1)[1].split("</figure>", 1)[0]
    assert (
        "Checks it draws: <a href='#toy-converges'><code>converges</code></a>, "
        "<a href='#toy-rate'><code>rate</code></a>" in figure
    )


def test_a_link_to_a_figure_or_check_left_out_of_the_report_is_plain_text(tmp_path, monkeypatch):
    draws = figures.named_figures("figures.toy", [fig1])
    info = tasks.PaperInfo("toy", "A toy paper", {"still": _Still}, label="Toy")
    monkeypatch.setitem(papers(), "toy", Paper(info, (converges, rate, norm_bounded), draws))
    metadata = _provenance.provenance() | {"options": {"full": False, "jobs": 2}, "wall_seconds": 1.0}
    files = {"toy": {"toy_fig1": fig1(tmp_path / "figures", False)}}
    only_rate = index_page({"toy": [rate()]}, files, tmp_path, metadata)
    assert "<code>converges</code>" in only_rate and "href='#toy-converges'" not in only_rate
    no_figures = index_page({"toy": [rate()]}, {"toy": {}}, tmp_path, metadata)
    assert "Drawn in <code>toy_fig1</code>" in no_figures and "href='#toy_fig1'" not in no_figures


def test_a_figure_naming_a_check_its_paper_does_not_have_is_refused():
    from attnflow.papers import _paper

    draws = figures.named_figures("figures.toy", [fig1])
    info = tasks.PaperInfo("toy", "A toy paper", {"still": _Still}, label="Toy")
    with pytest.raises(ValueError, match="toy_fig1 names 'rate'"):
        _paper(info, "toy", "tests", (converges,), draws)
    with pytest.raises(TypeError, match="sequence of check names"):
        figures.caption("Fig. 2: y. Look for it.", checks="converges")


def test_a_failure_is_told_apart_as_a_tolerance_exceeded_or_a_check_that_did_not_run(tmp_path, monkeypatch):
    @theory.claim("Theorem 1: the run ends", method="by running it", tolerance=0.1)
    def crashes():
        raise FloatingPointError("the run diverged at step 3")

    info = tasks.PaperInfo("toy", "A toy paper", {"still": _Still}, label="Toy")
    monkeypatch.setitem(papers(), "toy", Paper(info, (crashes, rate), {}))

    raised, exceeded = theory.run_checks([theory.check_makers("toy", [crashes], False)[0], rate])
    assert (raised.outcome, exceeded.outcome) == (theory.Outcome.not_run, theory.Outcome.exceeded)
    assert (converges().outcome, norm_bounded().outcome) == (theory.Outcome.passed, theory.Outcome.deviation)
    assert outcome_counts([raised, exceeded, converges()]) == (
        "1 pass, 2 fail (1 tolerance exceeded, 1 not run), 0 expected deviation(s)"
    )
    page = index_page({"toy": [raised, exceeded]}, {"toy": {}}, tmp_path, {})
    summary = " ".join(_text(re.search(r"<ul class='verdicts'>.*?</ul>", page).group(0)).split())
    assert "Did not run : crashes : FloatingPointError: the run diverged at step 3" in summary
    assert "Exceeds its tolerance : rate" in summary
    assert "<td class='verdict fail'>fail<div class='kind'>not run</div></td>" in page


def test_a_click_on_a_figure_opens_it_full_size(page):
    figure = page.split("<figure id='toy_fig1'>", 1)[1].split("</figure>", 1)[0]
    assert re.search(
        r"<a href='figures/toy_fig1.png' title='full size'><img src='figures/toy_fig1.png'", figure
    )


def test_what_the_paper_prints_stands_beside_the_check_that_reproduces_it(page):
    converges_row = page.split("id='toy-converges'", 1)[1].split("</tr>", 1)[0]
    assert (
        "<strong>The paper prints:</strong> Table 1: “" in converges_row
        and "(the same 10 steps)" in converges_row
    )
    assert "The paper prints" not in page.split("id='toy-rate'", 1)[1].split("</tr>", 1)[0]
