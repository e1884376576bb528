"""Decision-list task: validation, labels, exact population loss and perfect classification
against brute-force Python implementations."""

import dataclasses
import doctest
import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import tasks.decision_lists as dl
from tasks.decision_lists import _config


def _softmax_columns(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def _brute_label(task, seq, j):
    for b in task.lists[seq[j]]:
        if b in seq:
            return task.perm[b]
    raise AssertionError("the list ends in its token")


def _brute_logits(W, V, seq):
    """V X σ(Xᵀ W X) with explicit one-hot matrices (Eqn 1 as written)."""
    X = np.eye(W.shape[0])[:, list(seq)]
    return V @ X @ _softmax_columns(X.T @ W @ X)


def _brute_loss(task, W, V, sequences):
    total = 0.0
    for seq in sequences:
        probs = _softmax_columns(_brute_logits(W, V, seq))
        total += np.mean([-np.log(probs[_brute_label(task, seq, j), j]) for j in range(len(seq))])
    return total / len(sequences)


@pytest.fixture
def tiny():
    return dl.DecisionLists.random(3, L=6, n=3, M=3)


def _random_model(key, L, scale=2.0):
    kw, kv = jax.random.split(key)
    return dl.DecisionListModel(
        scale * jax.random.normal(kw, (L, L), jnp.float64), scale * jax.random.normal(kv, (L, L), jnp.float64)
    )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(perm=(0, 1, 2), lists=((0,), (1,), (2,)), n=2, M=4), "M"),
        (dict(perm=(0, 1, 2), lists=((1,), (1,), (2,)), n=2, M=2), "ending in a"),
        (dict(perm=(0, 1, 2), lists=((0,), (1,), (2,)), n=4, M=1), "n"),
        (dict(perm=(0, 1, 1), lists=((0,), (1,), (2,)), n=2, M=1), "perm"),
        (dict(perm=(0, 1, 2), lists=((1, 0), (1,), (2,)), n=2, M=1), "length"),
        (dict(perm=(0, 1, 2), lists=((0,), (1,), (2,)), n=2, M=1, distribution="zipf"), "distribution"),
    ],
)
def test_bad_configs_raise(kwargs, field):
    with pytest.raises(ValueError, match=field):
        dl.DecisionLists(**kwargs)


@pytest.mark.parametrize(
    "field, value",
    [("n", math.nan), ("n", math.inf), ("n", 2.5), ("M", 1.0), ("M", True), ("distribution", math.nan)],
)
def test_bad_values_name_the_field(field, value):
    kwargs = dict(perm=(0, 1, 2), lists=((0,), (1,), (2,)), n=2, M=1)
    kwargs[field] = value
    with pytest.raises(ValueError, match=rf"DecisionLists\.{field} must be .*, got {value!r}"):
        dl.DecisionLists(**kwargs)


def test_random_task_is_valid_and_seeded():
    task = dl.DecisionLists.random(1, L=12, n=4, M=3, fixed_m=3)
    assert task == dl.DecisionLists.random(1, L=12, n=4, M=3, fixed_m=3)
    assert all(len(e) == 3 and e[-1] == a for a, e in enumerate(task.lists))
    with pytest.raises(ValueError, match="M"):
        dl.DecisionLists.random(0, L=4, n=2, M=5)


def test_task_config_draws_the_task_of_its_seed_or_the_run_s():
    config = dl.DecisionListsConfig(L=8, n=3, M=2, fixed_m=2, distribution="iid")
    assert config.draw(5) == dl.DecisionLists.random(5, L=8, n=3, M=2, fixed_m=2, distribution="iid")
    with pytest.raises(ValueError, match="needs a seed"):
        config.draw()
    expected = jax.tree.leaves(dl.DecisionLists.random(5, L=8, n=3, M=2, fixed_m=2).arrays())
    fixed = dataclasses.replace(config, seed=5)
    for arrays in (config.run_arrays(5), fixed.run_arrays(0)):
        assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(arrays), expected))
    with pytest.raises(ValueError, match=r"DecisionListsConfig: fixed_m must be at most M, got fixed_m=3"):
        dl.DecisionListsConfig(M=2, fixed_m=3)


def test_task_config_examples_run():
    """The docstring examples of the task config (`DecisionListsConfig` in a simulation among them)."""
    result = doctest.testmod(_config, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_labels_match_brute_force(tiny):
    arrays = tiny.arrays()
    for seq in itertools.product(range(tiny.L), repeat=tiny.n):
        got = np.asarray(dl.labels(arrays, jnp.asarray(seq, jnp.int32)))
        assert list(got) == [_brute_label(tiny, seq, j) for j in range(tiny.n)]


def test_support_sizes():
    tokens, weights = dl.support(8, 3, "distinct")
    assert tokens.shape == (56, 3) and np.isclose(weights.sum(), 1.0)
    tokens, _ = dl.support(4, 3, "iid")
    assert tokens.shape == (64, 3) and len({tuple(t) for t in tokens}) == 64
    with pytest.raises(ValueError, match="sampled"):
        dl.support(60, 8, "distinct")


@pytest.mark.parametrize("distribution", ["distinct", "iid"])
def test_exact_population_loss_matches_brute_force(tiny, getkey, distribution):
    """The distinct support is the C(L, n) subsets: equal to the average over all ordered tuples."""
    task = dl.DecisionLists(tiny.perm, tiny.lists, tiny.n, tiny.M, distribution)
    model = _random_model(getkey(), task.L)
    W, V = np.asarray(model.W), np.asarray(model.V)
    if distribution == "distinct":
        sequences = list(itertools.permutations(range(task.L), task.n))
    else:
        sequences = list(itertools.product(range(task.L), repeat=task.n))
    exact = float(dl.population_loss(model, dl.exact_population(task)))
    np.testing.assert_allclose(exact, _brute_loss(task, W, V, sequences), rtol=1e-12)


def test_logits_match_brute_force(tiny, getkey):
    model = _random_model(getkey(), tiny.L)
    seq = (4, 0, 4)
    np.testing.assert_allclose(
        np.asarray(model.logits(jnp.asarray(seq, jnp.int32))),
        _brute_logits(np.asarray(model.W), np.asarray(model.V), seq),
        rtol=1e-12,
    )


def test_sampled_estimate_agrees_with_exact(getkey):
    task = dl.DecisionLists.random(0, L=8, n=3, M=3)
    model = _random_model(getkey(), task.L, scale=1.0)
    exact = float(dl.population_loss(model, dl.exact_population(task)))
    sample = dl.sampled_population(task, getkey(), 2048)
    losses = jax.vmap(dl.sequence_loss, in_axes=(None, 0, 0))(model, sample.tokens, sample.labels)
    estimate = float(dl.population_loss(model, sample))
    stderr = float(jnp.std(losses)) / math.sqrt(2048)
    assert abs(estimate - exact) < 4.0 * stderr


def test_perfect_matches_brute_force_argmax(getkey):
    """Random W shaped like a ranking of each list (so both outcomes occur) against a per-sequence
    argmax over every sequence of the support."""
    task = dl.DecisionLists.random(2, L=8, n=3, M=3)
    population = dl.exact_population(task)
    P = np.asarray(task.permutation_matrix())
    outcomes = []
    for _ in range(30):
        rank = np.zeros((task.L, task.L))
        for a, entries in enumerate(task.lists):
            rank[list(entries), a] = np.arange(len(entries), 0, -1)
        noise = np.asarray(jax.random.normal(getkey(), (task.L, task.L), jnp.float64))
        W = 3.0 * rank + 1.5 * noise
        V = 20.0 * P + 2.0 * np.asarray(jax.random.normal(getkey(), (task.L, task.L), jnp.float64))
        brute = True
        for seq in itertools.combinations(range(task.L), task.n):
            logits = _brute_logits(W, V, seq)
            for j in range(task.n):
                y = _brute_label(task, seq, j)
                others = np.delete(logits[:, j], y)
                brute &= bool(logits[y, j] - others.max() > dl.TAU_TIE)
        model = dl.DecisionListModel(jnp.asarray(W), jnp.asarray(V))
        assert bool(dl.perfect(model, population)) == brute
        outcomes.append(brute)
    assert any(outcomes) and not all(outcomes)


def test_ties_at_zero_attention_are_not_perfect():
    task = dl.DecisionLists.random(0, L=8, n=3, M=2)
    model = dl.DecisionListModel(jnp.zeros((8, 8)), 10.0 * task.permutation_matrix())
    assert not bool(dl.perfect(model, dl.exact_population(task)))


def test_mu_criterion_matches_enumeration(getkey):
    """With V = cP, distinct, n >= 3, L − M >= n, perfect ⟺ μ(W) > 0."""
    task = dl.DecisionLists.random(5, L=8, n=3, M=2)
    assert dl.mu_criterion_applies(task)
    arrays, population = task.arrays(), dl.exact_population(task)
    V = 30.0 * task.permutation_matrix()
    agree, positives = 0, 0
    for _ in range(40):
        rank = np.zeros((task.L, task.L))
        for a, entries in enumerate(task.lists):
            rank[list(entries), a] = np.arange(len(entries), 0, -1)
        W = jnp.asarray(rank) + 0.3 * jax.random.normal(getkey(), (task.L, task.L), jnp.float64)
        by_mu = bool(dl.mu(W, arrays) > 0)
        agree += by_mu == bool(dl.perfect(dl.DecisionListModel(W, V), population))
        positives += by_mu
    assert agree == 40 and 0 < positives < 40


def test_certificate_implies_perfect(getkey):
    task = dl.DecisionLists.random(4, L=8, n=3, M=2)
    arrays, population = task.arrays(), dl.exact_population(task)
    P = task.permutation_matrix()
    certified = 0
    for _ in range(20):
        rank = np.zeros((task.L, task.L))
        for a, entries in enumerate(task.lists):
            rank[list(entries), a] = 2.0 * np.arange(len(entries), 0, -1)
        W = jnp.asarray(rank) + 0.3 * jax.random.normal(getkey(), (task.L, task.L), jnp.float64)
        V = 40.0 * P + 0.5 * jax.random.uniform(getkey(), (task.L, task.L), jnp.float64, -1.0, 1.0)
        if bool(dl.certified(W, V, jnp.asarray(40.0), P, task.n, arrays)):
            certified += 1
            assert bool(dl.perfect(dl.DecisionListModel(W, V), population))
    assert certified > 0


def test_event_probabilities_match_closed_form():
    task = dl.DecisionLists.random(7, L=10, n=4, M=3)
    enumerated = dl.event_probabilities(task.arrays(), dl.exact_population(task))
    np.testing.assert_allclose(np.asarray(enumerated), dl.distinct_event_probabilities(task), atol=1e-15)
    presence = dl.presence_probabilities(task.L, dl.exact_population(task))
    np.testing.assert_allclose(np.asarray(presence), np.full(task.L, task.n / task.L), rtol=1e-12)


def test_zero_attention_loss_closed_form():
    """𝓛(0, cP) = log(n + (L − n) e^{−c/n}) under distinct."""
    task = dl.DecisionLists.random(0, L=9, n=4, M=2)
    c = 7.0
    model = dl.DecisionListModel(jnp.zeros((9, 9)), c * task.permutation_matrix())
    np.testing.assert_allclose(
        float(dl.population_loss(model, dl.exact_population(task))),
        math.log(4 + 5 * math.exp(-c / 4)),
        rtol=1e-13,
    )
