"""Each paper's page shows its checks and figures as they are declared: the site's hook writes the
table of checks from their declarations (`theory.claim`) and the list of figures from their
captions (`figures.caption`) where the page says so, and no page keeps a list of its own."""

import math
import re
from pathlib import Path

import pytest

import theory
from attnflow.papers import papers
from tests.helpers import ASCII_MATHS, REPOSITORY, load_file, plain_maths

DOCS = Path(__file__).parents[1] / "docs"
ROW = re.compile(
    r'^\| <a id="check-(?P<name>[A-Za-z0-9_]+)"></a><code>(?P<shown>[A-Za-z0-9_<>]+)</code><br>'
    r"tolerance (?P<tolerance>[^<]+)<br>"
    r"(?P<provenance>[a-z]+) \|(?P<cells>.*)\|$"
)


def _hook():
    return load_file("docs/hooks/papers.py")


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_paper_page_has_the_generated_checks_table_and_none_of_its_own(paper):
    text = (DOCS / "papers" / f"{paper}.md").read_text()
    checks = text.split("\n## Checks", 1)[1].split("\n## ", 1)[0]
    assert checks.count(_hook().CHECKS_MARKER) == 1
    assert not [line for line in checks.splitlines() if line.startswith("|")]


@pytest.mark.parametrize("paper", sorted(papers()))
def test_the_checks_table_is_the_declared_checks_in_order(paper):
    lines = _hook().checks_table(paper).splitlines()[2:-2]  # inside <div class="checks" markdown>
    assert lines[0].startswith("| check | claim |") and set(lines[1]) <= set("|-")
    rows = [ROW.match(line) for line in lines[2:]]
    assert all(rows), [line for line, row in zip(lines[2:], rows) if not row]
    declared = papers()[paper].checks
    assert [row["name"] for row in rows] == [fn.__name__ for fn in declared]
    assert [row["shown"].replace("<wbr>", "") for row in rows] == [row["name"] for row in rows]
    for row, fn in zip(rows, declared):
        claim, method = (cell.strip() for cell in row["cells"].split("|"))
        tolerance, provenance = row["tolerance"], row["provenance"]
        declaration = fn.declaration
        drawn = papers()[paper].figures_showing(fn.__name__)
        if drawn:
            method, said = method.rsplit("<br>Drawn in ", 1)
            assert said == ", ".join(f"[`{f}`](#figure-{f})" for f in drawn) + "."
        if declaration.printed:
            method, printed = method.split("<br>**The paper prints:** ", 1)
            assert printed == declaration.printed
        assert (claim, method) == (declaration.claim, declaration.method)
        assert claim and method, fn.__name__
        assert math.isclose(float(tolerance.split()[0]), declaration.tolerance, rel_tol=1e-5)
        bound = declaration.bound
        assert tolerance.endswith(" bound)") == (bound is not None)
        assert bound is None or tolerance.endswith(f"({bound.value} bound)")
        assert provenance == declaration.provenance.value


def test_a_claim_that_would_break_the_table_is_refused(monkeypatch):
    pytest.importorskip("mkdocs", reason="the refusal is mkdocs' PluginError")
    hook = _hook()

    @theory.claim(r"$\|x\| = 1$", method="by hand", tolerance=0.0)
    def norm_is_one():
        raise AssertionError("not run")

    monkeypatch.setattr(hook, "_papers", lambda: {"toy": type("Paper", (), {"checks": (norm_is_one,)})})
    with pytest.raises(Exception, match=r"claim of the check toy.norm_is_one has a '\|'"):
        hook.checks_table("toy")


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_paper_page_lists_its_declared_figures_and_none_by_hand(paper):
    text = (DOCS / "papers" / f"{paper}.md").read_text()
    section = text.split("\n## Figures", 1)[1].split("\n## ", 1)[0]
    assert section.count(_hook().FIGURES_MARKER) == 1
    assert not [line for line in section.splitlines() if line.startswith(f"- `{paper}_")]
    items = _hook().figures_list(paper).splitlines()
    declared = papers()[paper].figures
    assert len(items) == len(declared)
    for item, (name, draw) in zip(items, declared.items()):
        listed = f'- <a id="figure-{name}"></a>`{name}`: {draw.caption} `attnflow figures {name}`'
        if draw.checks:
            listed += " Checks it draws: " + ", ".join(f"[`{c}`](#check-{c})" for c in draw.checks) + "."
        assert item == listed
        assert "Look for" in draw.caption, name


def test_with_images_each_figure_shows_its_png_beside_the_page():
    paper = sorted(papers())[0]
    listed = _hook().figures_list(paper, images=True)
    for name in papers()[paper].figures:
        image = f"figures/{name}.png"
        assert f"\n\n    [![{name}, quick sizes]({image})]({image})\n" in listed  # a click: full size


def test_the_figures_are_drawn_for_the_code_that_draws_them(tmp_path, monkeypatch):
    hook = _hook()
    for package in hook.SOURCES:
        (tmp_path / package / "__pycache__").mkdir(parents=True)
        (tmp_path / package / "__init__.py").write_text("x = 1\n")
    before = hook.source_digest(tmp_path)
    (tmp_path / "figures" / "__pycache__" / "a.pyc").write_bytes(b"compiled")
    (tmp_path / "docs.md").write_text("not code")
    assert hook.source_digest(tmp_path) == before
    (tmp_path / "tasks" / "__init__.py").write_text("x = 2\n")
    assert hook.source_digest(tmp_path) != before
    changed = hook.source_digest(tmp_path)
    (tmp_path / "attnflow" / "__init__.py").write_text("x = 2\n")  # the runtime the reproduction runs with
    assert hook.source_digest(tmp_path) != changed
    monkeypatch.setenv(hook.RESULTS_ENV, "off")
    assert hook.reproduce_results() == {}


def test_the_verdict_summary_names_each_failure_and_deviation_with_its_reason():
    def record(name, verdict, error, tolerance, **more):
        return theory.Check(
            "toy", name, "a claim", 1.0, 1.0, error, tolerance, verdict, **more
        ).to_dict()  # as verify.json holds it

    checks = [
        record("a", "pass", 0.0, 1.0),
        record("b", "deviation", 2.0, 1.0, deviation="eta_Z > 1"),
        record("c", "fail", math.nan, 1.0),
        record("d", "fail", math.nan, math.nan, note="ValueError: x_0 < 0"),
    ]
    meta = {"commit": "0123456789abcdef0123456789abcdef01234567+dirty", "date": "2026-11-26T17:00:00"}
    summary = _hook().verdict_summary("toy", checks, meta).splitlines()
    assert summary[0] == '!!! failure "1 of 4 checks pass, 2 fail, 1 deviates as documented"'
    assert "0123456789ab with uncommitted changes, 2026-11-26" in summary[2]
    assert "    - **Deviates, as documented**: [`b`](#check-b), a claim. Why: eta\\_Z > 1." in summary
    exceeded = "    - **Exceeds its tolerance**: [`c`](#check-c), a claim (error nan against tolerance 1)"
    assert exceeded in summary
    assert "    - **Did not run**: [`d`](#check-d): ValueError: x\\_0 &lt; 0" in summary
    passing = _hook().verdict_summary("toy", checks[:1], {})
    assert passing.startswith('!!! success "1 of 1 checks pass"') and "(not a git checkout, " in passing


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_paper_page_has_its_verdicts_before_its_first_section(paper):
    text = (DOCS / "papers" / f"{paper}.md").read_text()
    assert text.count(_hook().VERDICTS_MARKER) == 1
    assert text.index(_hook().VERDICTS_MARKER) < text.index("\n## ")


SEEDS = REPOSITORY.parent / "shared" / "seeds"


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' texts are not beside this checkout")
def test_what_a_check_says_the_paper_prints_is_quoted_from_the_paper():
    """Every quotation (between “ and ”) in a check's `printed` stands in one of the papers' texts,
    up to line breaks; and at least one check of every paper quotes its paper."""
    texts = " ".join(" ".join(path.read_text(errors="replace").split()) for path in SEEDS.glob("*.txt"))
    quoting = set()
    for name, each in papers().items():
        for fn in each.checks:
            for quote in re.findall(r"“([^”]+)”", fn.declaration.printed or ""):
                assert " ".join(quote.split()) in texts, (fn.__name__, quote)
                quoting.add(name)
    assert quoting == set(papers()), set(papers()) - quoting


@pytest.mark.parametrize(
    "text",
    [
        "t^(-1/2)",
        "((M-1)/M)^2",
        "L^-n",
        "lambda >= 1e-2",
        "x != 0",
        "||W*||",
        "eta2*lambda",
        "beta_nn'",
        "x -> 0",
        "2 T delta >> 1",
        "0.23 +- 0.01",
        "sqrt(T)",
        r"\alpha",
        "L* (a lower bound)",
        "T * error",
        "V~ = P",
        "U ~ Uniform[0, 1]",
        "L_0(t)",
        "|z_dot| < 1e-12",
        "max kappa=1",
        "theta3 = c_F/Q",
        "eps=1.0",
        "epsilon",
        "pi(i)=i",
        "phi",
        "omega_1",
        "nu=10.0",
        "xi in [0, 1]",
        "chi_l",
        "4 Gamma",
    ],
)
def test_ascii_maths_is_found(text):
    assert ASCII_MATHS.search(plain_maths(text))


@pytest.mark.parametrize(
    "text",
    [
        "an alphabetical list of betas, deltas and mutations; the pivot, the taunt, the etalon",
        "Recipe B seed 0, t = 0..900; 1 − cos ≥ 0.99 at T₂ (8/8); error = max of the two ratios",
        "η_Y/η_Z ≥ 10, ‖W⋆_kq‖², e⁻ᵃ, x₀, t⁻¹ᐟ², √(log T), Ṽ, U ∼ N(0, 1), α⁺, 1/|λ|",
        "`beta_max`, `eta_y`, `lemma1_invariant_set` and `x_0 -> x_1` name code",
        "K_P=0.2047, K_Q=0.4884, W_EE, m_E=64, T_test=[25, 30], one-hot PE, mini-batch GD lr=1.0",
    ],
)
def test_ascii_maths_spares_english_unicode_maths_and_code(text):
    assert not ASCII_MATHS.search(plain_maths(text)), ASCII_MATHS.search(plain_maths(text))


@pytest.mark.parametrize("paper", sorted(papers()))
def test_a_documented_deviation_and_what_the_paper_prints_are_written_in_unicode(paper):
    """The reasons a check deviates and the paper's printed values are shown as plain text (the
    verdict boxes, the report's "Why"): Unicode maths (η₂λ ≥ 10⁻², ‖W⋆‖²), never ASCII TeX; what
    is printed may hold `$…$` maths, which is rendered."""
    for fn in papers()[paper].checks:
        declared = fn.declaration
        for text in (declared.expected_deviation or "", re.sub(r"\$[^$]*\$", "", declared.printed or "")):
            found = ASCII_MATHS.search(plain_maths(text))
            assert not found, (fn.__name__, found.group(0), text)
