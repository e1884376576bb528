"""Data model, validator and generators of ntp_partial_order."""

import math

import numpy as np
import pytest

import tasks.ntp_partial_order as ntp


def test_svop_fixture():
    d = ntp.svop()
    S, V, O, P = range(4)  # noqa: E741 - the paper's token names
    assert d.num_sentences == 9 and d.max_length == 3
    np.testing.assert_allclose(d.weights, 1 / 9)
    np.testing.assert_array_equal(d.collocation(), [V, O, P, S])
    assert d.relation(S) == {(S, P)}
    assert d.relation(V) == {(V, S)}
    assert d.relation(O) == {(O, S), (O, V)}
    assert d.relation(P) == {(O, P)}
    assert d.token_types(P) == ntp.TokenTypes(
        optimal=(O,), non_optimal=(P,), confused=(), non_comparable=(S, V)
    )
    reports = ntp.validate(d)
    assert all(r.hall for r in reports)
    assert [(r.num_optimal, r.num_non_optimal, r.num_non_comparable) for r in reports] == [
        (1, 1, 2),
        (1, 1, 2),
        (1, 2, 1),
        (1, 1, 2),
    ]


def _with(extra, base=None):
    d = base or ntp.svop()
    sentences = d.sentences + tuple(s for s, _ in extra)
    labels = d.labels + tuple(y for _, y in extra)
    return ntp.Dataset(4, sentences, labels, names=d.names)


def test_rejects_confused_token():
    # query P: OP -> P makes O > P; SOP -> V (n(S) = V) makes S > O: O is confused
    with pytest.raises(ValueError, match=r"Assumption 1\(ii\).*query P.*O is confused"):
        ntp.validate(_with([((0, 2, 3), 1)]))


def test_rejects_cycle():
    # query P: O > P (OP -> P), P > S (SP -> S), S > O (SOP -> V): a cycle through O, P, S
    d = _with([((0, 3), 0), ((0, 2, 3), 1)])
    with pytest.raises(ValueError, match=r"Assumption 1\(ii\).*query P.*cycle"):
        ntp.validate(d)


def test_rejects_missing_collocation():
    d = ntp.svop()
    keep = [n for n, s in enumerate(d.sentences) if s != (2,)]  # drop O -> P
    broken = ntp.Dataset(
        4, tuple(d.sentences[n] for n in keep), tuple(d.labels[n] for n in keep), names=d.names
    )
    with pytest.raises(ValueError, match=r"Assumption 1\(i\).*no collocation maps a token to P"):
        ntp.validate(broken)
    no_length_one = ntp.Dataset(4, ((0, 1),), (2,))
    with pytest.raises(ValueError, match="no collocation"):
        ntp.validate(no_length_one)


def test_rejects_assumption3():
    # query P: sentence P P O P -> P: P (non-optimal) 3 times, O (optimal) once
    with pytest.raises(ValueError, match=r"Assumption 3.*query P.*token P occurs 3 times.*O only 1"):
        ntp.validate(_with([((3, 3, 2, 3), 3)]))


def test_rejects_unrealizable_and_two_labels_and_noninjective():
    with pytest.raises(ValueError, match="not realizable.*optimal token O"):
        ntp.validate(_with([((0, 1, 3), 3)]))  # label P = n(O), O absent
    with pytest.raises(ValueError, match="two labels"):
        ntp.validate(_with([((0, 1), 2), ((0, 1), 1)]))
    with pytest.raises(ValueError, match="not injective"):
        ntp.validate(ntp.Dataset(3, ((0,), (1,), (2,)), (1, 1, 0)))


def test_dataset_config_errors():
    with pytest.raises(ValueError, match="vocab_size"):
        ntp.Dataset(1, ((0,),), (0,))
    with pytest.raises(ValueError, match="sentence 0"):
        ntp.Dataset(3, ((5,),), (0,))
    with pytest.raises(ValueError, match="weights"):
        ntp.Dataset(3, ((0,), (1,)), (1, 2), weights=(0.5, 0.4))
    with pytest.raises(ValueError, match="k_max"):
        ntp.RecipeB(vocab_size=4, k_max=3, m_max=4)
    with pytest.raises(ValueError, match=r"RecipeB\.rho must be a finite number in \[0, 1\], got 1.5"):
        ntp.RecipeB(rho=1.5)


@pytest.mark.parametrize(
    "recipe, field, value",
    [
        (ntp.RecipeB, "rho", math.nan),
        (ntp.RecipeB, "p_incl", math.inf),
        (ntp.RecipeB, "vocab_size", 20.5),
        (ntp.RecipeB, "k_max", math.nan),
        (ntp.RecipeB, "c_max", 2.0),
        (ntp.RecipeB, "complete", 1),
        (ntp.RecipeA, "vocab_size", math.inf),
        (ntp.RecipeA, "max_length", 6.5),
        (ntp.RecipeA, "max_length", True),
    ],
)
def test_recipes_refuse_nan_inf_and_non_integers(recipe, field, value):
    with pytest.raises(ValueError, match=rf"{recipe.__name__}\.{field} must be .*, got {value!r}"):
        recipe(**{field: value})


@pytest.mark.parametrize("seed", range(3))
def test_recipe_b_structure(seed):
    d = ntp.RecipeB().build(seed)
    assert d.max_length <= 6 and len(set(d.sentences)) == d.num_sentences
    for q in range(d.vocab_size):
        t = d.token_types(q)
        sentences = [s for s in d.sentences if s[-1] == q and len(s) > 1]
        assert len(sentences) >= 3
        # two-level order: each sentence holds exactly one distinct optimal token
        for s in sentences:
            assert len(set(s) & set(t.optimal)) == 1
            assert set(s) <= set(t.optimal) | set(t.non_optimal)
    again = ntp.RecipeB().build(seed)
    assert again == d


def test_recipe_b_complete_satisfies_hall():
    d = ntp.RecipeB(complete=True).build(1)
    assert all(r.hall for r in ntp.validate(d))


def test_recipe_a_prefix_closed():
    d = ntp.RecipeA().build(0)
    samples = dict(zip(d.sentences, d.labels))
    for s in samples:
        if len(s) > 1:
            assert samples[s[:-1]] == s[-1]  # the prefix is a sample whose label is the next token
    assert d.max_length <= 6


def test_hall_condition_fails_on_spec_example():
    # query 4 (q): a > c, a > d, a > q, b > q with a, b, c, d = 0..3
    V = 5
    colloc = [((x,), (x + 1) % V) for x in range(V)]
    sentences = [((2, 3, 0, 4), 1), ((1, 4), 2)]
    d = ntp.Dataset(V, tuple(s for s, _ in colloc + sentences), tuple(y for _, y in colloc + sentences))
    reports = ntp.validate(d)
    assert not reports[4].hall and all(r.hall for r in reports[:4])
