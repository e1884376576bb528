"""Scan and Snap task: generator, Y/Z model, Lemma 1, population loss, sampling, metrics."""

import json
import math

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tasks.scan_snap as ss

from .helpers import int64_sizes, tree_allclose, value_sizes

_jit = eqx.filter_jit


def _random_model(key, M, scale=1.0):
    key_y, key_z = jax.random.split(key)
    return ss.YZModel(Y=scale * jax.random.normal(key_y, (M, M)), Z=scale * jax.random.normal(key_z, (M, M)))


def _random_classes(seed=0, K=4, M=15):
    """Random sparse supports, two classes sharing a query, non-uniform class probabilities."""
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0.1, 1.0, (K, M)) * (rng.uniform(size=(K, M)) < 0.6)
    probs[:, M - 2 :] = 0.0  # two tokens never in any context
    probs[:, 0] = 0.3  # one token common to every class
    probs /= probs.sum(axis=1, keepdims=True)
    query = np.array([M - 2, M - 2, M - 1, 3])[:K]
    class_probs = rng.uniform(0.5, 1.0, K)
    return ss.SequenceClasses(
        probs=probs,
        query=query,
        next_token=np.arange(K) + 1,
        class_probs=class_probs / class_probs.sum(),
    )


def _single_ce(model, tokens, query, label):
    """Cross-entropy of one sequence, through the position form of the attention."""
    v = model.attention_output_from_tokens(tokens, query)
    logits = model.Y.T @ (v / jnp.linalg.norm(v))
    return -jax.nn.log_softmax(logits)[label]


# ------------------------------------------------------------------ generator and classes


@pytest.mark.parametrize("num_last, M", [(1, 33), (3, 79), (5, 125), (10, 240)])
def test_syn_medium_vocabulary_and_layout(num_last, M):
    config = ss.Dataset2.syn_medium(num_last)
    classes = config.build()
    K = 2 * num_last
    assert (config.M, config.K, classes.M, classes.K) == (M, K, M, K)
    unique_offset, last_offset = 10, 10 + 10 * K
    np.testing.assert_array_equal(classes.query, last_offset + np.arange(K) // 2)
    np.testing.assert_array_equal(classes.next_token, last_offset + num_last + np.arange(K))
    np.testing.assert_array_equal(classes.common_tokens(), np.arange(10))
    for n in range(K):
        start = unique_offset + 10 * n
        np.testing.assert_array_equal(classes.distinct_tokens(n), np.arange(start, start + 10))
    for m in range(num_last):
        np.testing.assert_array_equal(classes.classes_of_query(last_offset + m), [2 * m, 2 * m + 1])
    np.testing.assert_array_equal(classes.queries(), last_offset + np.arange(num_last))


def test_syn_small_layout_classification_and_probabilities():
    classes = ss.Dataset2.syn_small().build()
    assert (classes.M, classes.K) == (34, 2)
    np.testing.assert_array_equal(classes.query, [30, 31])
    np.testing.assert_array_equal(classes.next_token, [32, 33])
    np.testing.assert_array_equal(classes.common_tokens(), np.arange(10))
    np.testing.assert_array_equal(classes.distinct_tokens(0), np.arange(10, 20))
    np.testing.assert_array_equal(classes.distinct_tokens(1), np.arange(20, 30))
    omega = classes.omega_sizes()
    np.testing.assert_array_equal(omega[:10], 2)
    np.testing.assert_array_equal(omega[10:30], 1)
    np.testing.assert_array_equal(omega[30:], 0)
    np.testing.assert_array_equal(classes.omega(15), [0])
    np.testing.assert_array_equal(classes.omega(3), [0, 1])
    dt_probs = 0.1 * np.arange(1, 11) / 15.5
    for n, block in [(0, slice(10, 20)), (1, slice(20, 30))]:
        np.testing.assert_allclose(classes.probs[n, :10], 1 / 15.5, rtol=0, atol=1e-15)
        np.testing.assert_allclose(classes.probs[n, block], dt_probs, rtol=0, atol=1e-15)
    np.testing.assert_array_equal(classes.probs[0, 20:], 0.0)
    np.testing.assert_array_equal(classes.probs[1, 10:20], 0.0)
    np.testing.assert_array_equal(classes.class_probs, [0.5, 0.5])


def test_per_query_common_tokens_layout():
    config = ss.Dataset2(
        num_last=2, num_next_per_last=2, num_common=1, num_common_per_last=2, num_unique_per_next=3
    )
    classes = config.build()
    assert classes.M == 1 + 2 * 2 + 3 * 4 + 2 + 4 == 23
    np.testing.assert_array_equal(np.flatnonzero(classes.probs[2]), [0, 3, 4, 11, 12, 13])
    np.testing.assert_array_equal(classes.common_tokens(), [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(classes.query, [17, 17, 18, 18])
    np.testing.assert_array_equal(classes.next_token, [19, 20, 21, 22])
    np.testing.assert_allclose(classes.probs[2, [0, 3, 11, 13]], np.array([1, 1, 0.1, 1]) / 4.65)


@pytest.mark.parametrize(
    "field, value",
    [
        ("num_last", 0),
        ("num_next_per_last", 0),
        ("num_common", -1),
        ("num_common_per_last", -2),
        ("num_unique_per_next", -1),
        ("num_last", 1.5),
        ("common_unnormalized_prob", 0.0),
        ("unique_unnormalized_min", -0.1),
        ("unique_unnormalized_max", 0.05),
        ("unique_unnormalized_max", math.inf),
    ],
)
def test_dataset2_bad_config_names_the_field(field, value):
    kwargs = dict(
        num_last=2,
        num_next_per_last=1,
        num_common=10,
        num_common_per_last=0,
        num_unique_per_next=10,
    )
    kwargs[field] = value
    with pytest.raises(ValueError, match=field):
        ss.Dataset2(**kwargs)


def test_dataset2_message_gives_range_and_needs_a_contextual_token():
    with pytest.raises(ValueError, match=r"Dataset2\.num_last must be an integer >= 1, got 0"):
        ss.Dataset2.syn_medium(0)
    with pytest.raises(ValueError, match=r"Dataset2: num_common \+ .* must be >= 1"):
        ss.Dataset2(1, 1, num_common=0, num_common_per_last=0, num_unique_per_next=0)
    with pytest.raises(TypeError, match="num_unique_per_next"):
        ss.Dataset2(1, 1, num_common=1, num_common_per_last=0)


@pytest.mark.parametrize(
    "field, value",
    [
        ("num_common", math.nan),
        ("num_next_per_last", math.inf),
        ("num_unique_per_next", 2.0),
        ("num_common_per_last", True),
        ("common_unnormalized_prob", math.nan),
        ("unique_unnormalized_min", math.inf),
        ("unique_unnormalized_max", "1"),
    ],
)
def test_dataset2_refuses_nan_inf_and_non_integers(field, value):
    kwargs = dict(
        num_last=2, num_next_per_last=1, num_common=10, num_common_per_last=0, num_unique_per_next=10
    )
    kwargs[field] = value
    with pytest.raises(ValueError, match=rf"Dataset2\.{field} must be .*, got {value!r}"):
        ss.Dataset2(**kwargs)


@pytest.mark.parametrize(
    "field, change",
    [
        ("probs", dict(probs=[[0.5, 0.6, 0.0], [0.0, 0.0, 1.0]])),
        ("probs", dict(probs=[[1.5, -0.5, 0.0], [0.0, 0.0, 1.0]])),
        ("probs", dict(probs=np.zeros((0, 3)), query=[], next_token=[])),
        ("probs", dict(probs=[[1.0], [1.0]])),
        ("query", dict(query=[0, 3])),
        ("query", dict(query=[0.0, 1.0])),
        ("next_token", dict(next_token=[-1, 1])),
        ("next_token", dict(next_token=[2, 2])),
        ("class_probs", dict(class_probs=[0.5, 0.6])),
        ("class_probs", dict(class_probs=[1.0])),
    ],
)
def test_sequence_classes_bad_input_names_the_field(field, change):
    kwargs = dict(probs=[[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], query=[0, 1], next_token=[1, 2])
    kwargs.update(change)
    with pytest.raises(ValueError, match=field):
        ss.SequenceClasses(**kwargs)


def test_sequence_classes_read_only_and_to_dict_round_trip():
    classes = _random_classes()
    with pytest.raises(ValueError):
        classes.probs[0, 0] = 1.0
    data = json.loads(json.dumps(classes.to_dict()))
    assert (data["K"], data["M"]) == (classes.K, classes.M)
    again = ss.SequenceClasses(
        probs=data["probs"],
        query=data["query"],
        next_token=data["next_token"],
        class_probs=data["class_probs"],
    )
    np.testing.assert_array_equal(again.probs, classes.probs)
    np.testing.assert_array_equal(again.class_probs, classes.class_probs)


# ------------------------------------------------------------------ model and Lemma 1


def test_uniform_init_bounds_and_dtype(getkey):
    M = 33
    model = ss.YZModel.uniform(getkey(), M, dtype=jnp.float32)
    bound = 1 / math.sqrt(M)
    for w in (model.Y, model.Z):
        assert w.dtype == jnp.float32 and w.shape == (M, M)
        assert float(jnp.max(jnp.abs(w))) <= bound
        assert float(jnp.max(jnp.abs(w))) > 0.9 * bound
    assert not np.allclose(model.Y, model.Z)
    assert not np.any(ss.YZModel.zeros(M).Y)
    with pytest.raises(ValueError, match="M must be >= 2"):
        ss.YZModel.zeros(1)


@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_counts_form_equals_position_form(getkey, scale):
    M, T = 12, 40
    model = _random_model(getkey(), M, scale)
    tokens = jax.random.randint(getkey(), (T - 1,), 0, M - 3)  # tokens M-3.. never occur
    counts = jnp.bincount(tokens, length=M)
    both = _jit(lambda m, n, x, q: (m.attention_output(n, q), m.attention_output_from_tokens(x, q)))
    for query in (0, M - 1):
        from_counts, from_tokens = both(model, counts, tokens, query)
        assert np.all(np.isfinite(from_counts))
        np.testing.assert_allclose(from_counts, from_tokens, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(jnp.sum(from_counts), 1.0, rtol=0, atol=1e-14)
        np.testing.assert_array_equal(from_counts[M - 3 :], 0.0)


def test_lemma1_matches_autograd_and_conserves_row_sums(getkey):
    M, T = 12, 40
    model = _random_model(getkey(), M)
    tokens = jax.random.randint(getkey(), (T - 1,), 0, M)
    query, label = 4, 7
    Y_dot, Z_dot = _jit(ss.lemma1_update)(model, tokens, query, label)
    grad = _jit(jax.grad(_single_ce))(model, tokens, query, label)
    assert float(jnp.max(jnp.abs(Y_dot + grad.Y))) < 1e-12
    assert float(jnp.max(jnp.abs(Z_dot + grad.Z))) < 1e-12
    assert float(jnp.max(jnp.abs(Z_dot[query]))) > 1e-3  # the check is not vacuous
    np.testing.assert_array_equal(np.delete(np.asarray(Z_dot), query, axis=0), 0.0)
    assert float(jnp.max(jnp.abs(Y_dot.sum(axis=1)))) < 1e-12
    assert float(jnp.max(jnp.abs(Z_dot.sum(axis=1)))) < 1e-12


def test_cross_entropy_vmap_equals_loop(getkey):
    classes = ss.Dataset2.syn_small().build()
    model = _random_model(getkey(), classes.M)
    batch = _jit(ss.sample)(getkey(), classes, 7, 20)
    single = jax.jit(lambda c, q, n: -jax.nn.log_softmax(model.logits(c, q))[n])
    loop = [single(batch.counts[i], batch.query[i], batch.label[i]) for i in range(7)]
    np.testing.assert_allclose(_jit(ss.cross_entropy)(model, batch), np.mean(loop), rtol=1e-13)


# ------------------------------------------------------------------ population loss


def test_population_loss_at_zero_is_log_M():
    for config in (ss.Dataset2.syn_small(), ss.Dataset2.syn_medium(3)):
        classes = config.build()
        loss = _jit(ss.population_loss)(ss.YZModel.zeros(classes.M), classes)
        np.testing.assert_allclose(loss, math.log(classes.M), rtol=1e-14)


def test_population_loss_is_cross_entropy_of_the_limit_counts(getkey):
    classes = _random_classes()
    model = _random_model(getkey(), classes.M)
    per_class = _jit(jax.vmap(lambda c, q, n: ss.cross_entropy(model, ss.Batch(c[None], q[None], n[None]))))(
        jnp.asarray(classes.probs), jnp.asarray(classes.query), jnp.asarray(classes.next_token)
    )
    expected = np.sum(classes.class_probs * np.asarray(per_class))
    np.testing.assert_allclose(_jit(ss.population_loss)(model, classes), expected, rtol=1e-13)


@pytest.mark.parametrize("which", ["random", "syn_medium"])
def test_population_gradient_formula_is_minus_autograd(getkey, which):
    if which == "random":
        classes = _random_classes()
        model = _random_model(getkey(), classes.M)
    else:
        classes = ss.Dataset2.syn_medium(3).build()
        model = _random_model(getkey(), classes.M, scale=0.5)
    Y_dot, Z_dot = _jit(ss.population_gradient_formula)(model, classes)
    grad = _jit(jax.grad(ss.population_loss))(model, classes)
    assert float(jnp.max(jnp.abs(grad.Z))) > 1e-3  # the check is not vacuous
    assert float(jnp.max(jnp.abs(Y_dot + grad.Y))) < 1e-12
    assert float(jnp.max(jnp.abs(Z_dot + grad.Z))) < 1e-12
    assert float(jnp.max(jnp.abs(Y_dot.sum(axis=1)))) < 1e-12
    assert float(jnp.max(jnp.abs(Z_dot.sum(axis=1)))) < 1e-12


def test_population_loss_vmap_over_models_equals_loop(getkey):
    classes = ss.Dataset2.syn_medium(1).build()
    arrays = classes.arrays()
    models = eqx.filter_vmap(lambda k: ss.YZModel.uniform(k, classes.M))(jax.random.split(getkey(), 5))
    batched = jax.jit(jax.vmap(ss.population_loss, in_axes=(0, None)))(models, arrays)
    batched_grad = jax.jit(jax.vmap(ss.population_gradient_formula, in_axes=(0, None)))(models, arrays)
    single_loss = jax.jit(ss.population_loss)
    single_grad = jax.jit(ss.population_gradient_formula)
    for i in range(5):
        model, grad_i = jax.tree_util.tree_map(lambda x: x[i], (models, batched_grad))  # noqa: B023
        np.testing.assert_allclose(batched[i], single_loss(model, arrays), rtol=1e-13)
        assert tree_allclose(grad_i, single_grad(model, arrays))


# ------------------------------------------------------------------ sampling


def test_sample_frequencies_counts_and_labels():
    base = ss.Dataset2.syn_small().build()
    classes = ss.SequenceClasses(base.probs, base.query, base.next_token, class_probs=[0.3, 0.7])
    B, T = 4000, 65
    key = jax.random.PRNGKey(1234)
    batch = jax.jit(ss.sample, static_argnums=(2, 3))(key, classes.arrays(), B, T)
    counts = np.asarray(batch.counts)
    assert counts.shape == (B, classes.M)
    np.testing.assert_array_equal(counts.sum(axis=1), T - 1)
    # labels and queries come from the same class
    cls = np.searchsorted(classes.next_token, np.asarray(batch.label))
    np.testing.assert_array_equal(classes.next_token[cls], batch.label)
    np.testing.assert_array_equal(classes.query[cls], batch.query)
    # class frequencies (i.i.d., not balanced) and token frequencies within 4 sigma
    frac = np.mean(cls == 0)
    assert abs(frac - 0.3) < 4 * math.sqrt(0.3 * 0.7 / B)
    for n in range(classes.K):
        pooled = counts[cls == n].sum(axis=0)
        total = pooled.sum()
        p = classes.probs[n]
        expected = total * p
        assert np.all(np.abs(pooled - expected) <= 4 * np.sqrt(expected * (1 - p)) + 1e-9)
        np.testing.assert_array_equal(pooled[p == 0], 0)
    # the count form is the position form's counts, for the same key
    tokens = _jit(ss.sample_tokens)(key, classes.arrays(), B, T)
    np.testing.assert_array_equal(ss.token_counts(tokens.tokens, classes.M), counts)
    assert tokens.tokens.shape == (B, T - 1)


@settings(max_examples=5, deadline=None)  # each example compiles its own shapes
@given(
    seed=st.integers(0, 2**31 - 1),
    K=st.integers(1, 4),
    M=st.integers(4, 40),  # at least K distinct next tokens
    density=st.floats(0.05, 1.0),
    batch_size=st.integers(1, 9),
    T=st.integers(2, 70),
    dtype=st.sampled_from([jnp.float32, jnp.float64]),
)
@pytest.mark.slow
def test_support_counts_are_the_counts_of_the_dense_draw(seed, K, M, density, batch_size, T, dtype):
    """`sample` counts over each class's support; `sample_tokens` searches all M tokens: for
    the same key they give the same counts, whatever the supports (ragged, one token, the first
    or last token of the vocabulary absent) and T − 1 (a multiple of the counting chunk or not)."""
    rng = np.random.default_rng(seed)
    probs = rng.uniform(0.05, 1.0, (K, M)) * (rng.uniform(size=(K, M)) < density)
    probs[np.arange(K), rng.integers(0, M, K)] += 0.5  # every class has a token
    probs /= probs.sum(axis=1, keepdims=True)
    classes = ss.SequenceClasses(probs=probs, query=rng.integers(0, M, K), next_token=rng.permutation(M)[:K])
    arrays = classes.arrays(dtype)
    key = jax.random.PRNGKey(seed)
    counts = _jit(ss.sample)(key, arrays, batch_size, T).counts
    tokens = _jit(ss.sample_tokens)(key, arrays, batch_size, T).tokens
    np.testing.assert_array_equal(counts, ss.token_counts(tokens, M))


def test_sample_under_vmap_over_keys_is_independent_per_key():
    arrays = ss.Dataset2.syn_medium(3).build().arrays()
    keys = jax.random.split(jax.random.PRNGKey(7), 3)
    batches = jax.jit(jax.vmap(lambda k: ss.sample(k, arrays, 16, 9)))(keys)
    assert batches.counts.shape == (3, 16, 79)
    np.testing.assert_array_equal(batches.counts.sum(axis=-1), 8)
    one = _jit(ss.sample)(keys[1], arrays, 16, 9)
    np.testing.assert_array_equal(batches.counts[1], one.counts)
    assert not np.array_equal(batches.counts[0], batches.counts[1])


def test_sample_counts_in_32_bits_in_float64_mode():
    """In float64 mode (JAX's default integer int64) the sampled counts and their sums are int32:
    int64 tensors of batch x draws x support compile many times slower on a GPU (Fig. 6's largest
    vocabulary: 148 s instead of 60 s on one H200). Only the (batch, support) scatter indices stay
    int64."""
    arrays = ss.Dataset2.syn_medium(10).build().arrays(jnp.float32)
    batch_size, support = 32, arrays.support.shape[1]
    jaxpr = jax.make_jaxpr(lambda key: ss.sample(key, arrays, batch_size, 128))(jax.random.PRNGKey(0))
    assert jaxpr.out_avals[0].dtype == jnp.int32  # the counts
    assert max(int64_sizes(jaxpr.jaxpr), default=0) <= batch_size * support


def test_sample_rejects_bad_sizes():
    classes = ss.Dataset2.syn_small().build()
    with pytest.raises(ValueError, match="T must be >= 2"):
        ss.sample(jax.random.PRNGKey(0), classes, 4, 1)
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        ss.sample(jax.random.PRNGKey(0), classes, 0, 8)


# ------------------------------------------------------------------ metrics


def test_class_attention_is_eqn5(getkey):
    classes = _random_classes()
    model = _random_model(getkey(), classes.M)
    c = np.asarray(_jit(ss.class_attention)(model, classes))
    scores = classes.probs * np.exp(np.asarray(model.Z)[classes.query])
    np.testing.assert_allclose(c, scores / scores.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_array_equal(c[classes.probs == 0], 0.0)


def test_distinct_token_entropy(getkey):
    classes = ss.Dataset2.syn_medium(1).build()
    entropy = _jit(ss.distinct_token_entropy)(ss.YZModel.zeros(classes.M), classes)
    assert abs(float(entropy) - 2.1513) < 1e-4
    # random Z against a direct computation
    classes = ss.Dataset2.syn_medium(3).build()
    model = _random_model(getkey(), classes.M)
    z = np.asarray(model.Z)
    expected = []
    for n in range(classes.K):
        dt = classes.distinct_tokens(n)
        p = classes.probs[n, dt] * np.exp(z[classes.query[n], dt])
        p /= p.sum()
        expected.append(-np.sum(p * np.log(p)))
    entropy = _jit(ss.distinct_token_entropy)(model, classes)
    np.testing.assert_allclose(entropy, np.mean(expected), rtol=1e-12)


def test_recall_at_threshold():
    classes = ss.Dataset2.syn_small().build()
    M = classes.M
    np.testing.assert_array_equal(
        _jit(ss.recall_at_threshold)(ss.YZModel.zeros(M), classes, [0.9 / M, 1.1 / M]), [1.0, 0.0]
    )
    # class 0's query row raises its five most likely DTs: a = 0.112 there, 0.0152 elsewhere
    Z = jnp.zeros((M, M)).at[30, 15:20].set(2.0)
    model = ss.YZModel(Y=jnp.zeros((M, M)), Z=Z)
    taus = jnp.array([0.01, 0.02, 0.05, 0.2])
    recall = _jit(ss.recall_at_threshold)(model, classes.arrays(), taus)
    np.testing.assert_allclose(recall, [1.0, 0.5 * 0.5 + 0.5 * 1.0, 0.25, 0.0], rtol=1e-14)


def test_recall_counts_one_threshold_at_a_time(getkey):
    """The recall of many runs at many thresholds equals a count written out in numpy, and its
    program never compares every run × threshold × class × token at once (on a GPU such a
    comparison fuses into one kernel that takes a minute to compile at M = 240)."""
    classes = ss.Dataset2.syn_medium(3).build()
    arrays, runs, M = classes.arrays(jnp.float32), 6, classes.M
    models = jax.vmap(lambda key: ss.YZModel.uniform(key, M, dtype=jnp.float32))(
        jax.random.split(getkey(), runs)
    )
    models = eqx.tree_at(lambda m: m.Z, models, models.Z * 40.0)  # spread the attention out
    taus = jnp.linspace(0.2, 4.0, 41, dtype=jnp.float32) / M
    recall = jax.vmap(ss.recall_at_threshold, in_axes=(0, None, None))(models, arrays, taus)

    mask, query = np.asarray(arrays.dt_mask), np.asarray(arrays.query)
    has_dt = mask.any(axis=-1)
    for run in range(runs):
        attention = np.asarray(jax.nn.softmax(models.Z[run][query], axis=-1))
        above = (attention[None] > np.asarray(taus)[:, None, None]) & mask
        per_class = above.sum(-1) / np.maximum(mask.sum(-1), 1)
        np.testing.assert_allclose(recall[run], per_class[:, has_dt].mean(-1), rtol=0, atol=1e-6)
    assert 0.0 < float(recall.min()) < float(recall.max()) < 1.0

    jaxpr = jax.make_jaxpr(jax.vmap(ss.recall_at_threshold, in_axes=(0, None, None)))(models, arrays, taus)
    assert max(value_sizes(jaxpr.jaxpr)) < runs * len(taus) * M


# ------------------------------------------------------------------ float32 under strict promotion


def test_float32_everywhere(getkey):
    classes = ss.Dataset2.syn_small().build()
    arrays = classes.arrays(jnp.float32)
    model = ss.YZModel.uniform(getkey(), classes.M, dtype=jnp.float32)
    batch = _jit(ss.sample)(getkey(), arrays, 8, 16)
    tokens = _jit(ss.sample_tokens)(getkey(), arrays, 1, 16).tokens[0]

    @eqx.filter_jit
    def everything(model, arrays, batch, tokens):
        return [
            ss.cross_entropy(model, batch),
            ss.population_loss(model, classes),
            ss.class_attention(model, arrays),
            ss.distinct_token_entropy(model, arrays),
            ss.recall_at_threshold(model, arrays, [0.02, 0.03]),
            *ss.population_gradient_formula(model, classes),
            *ss.lemma1_update(model, tokens, 30, 32),
            model.attention_output_from_tokens(tokens, 30),
            *jax.tree_util.tree_leaves(jax.grad(ss.cross_entropy)(model, batch)),
        ]

    for out in everything(model, arrays, batch, tokens):
        assert out.dtype == jnp.float32
        assert np.all(np.isfinite(out))


def test_multinomial_counts_have_the_law_of_binned_tokens():
    """sample_multinomial draws counts from Multinomial(T - 1, P(.|n)), the law of `sample`."""
    classes = ss.Dataset2.syn_small().build()
    arrays = classes.arrays(jnp.float64)
    T, draws = 33, 20_000
    direct = eqx.filter_jit(ss.sample_multinomial)(jax.random.PRNGKey(0), arrays, draws, jnp.float64(T - 1))
    binned = eqx.filter_jit(ss.sample)(jax.random.PRNGKey(1), arrays, draws, T)
    np.testing.assert_array_equal(direct.counts.sum(axis=1), T - 1)
    for batch in (direct, binned):
        cls = np.searchsorted(classes.next_token, np.asarray(batch.label))
        np.testing.assert_array_equal(batch.query, classes.query[cls])
        assert np.all((np.asarray(batch.counts) > 0) <= (classes.probs[cls] > 0))
    for n, label in enumerate(classes.next_token):
        a = np.asarray(direct.counts)[np.asarray(direct.label) == label]
        b = np.asarray(binned.counts)[np.asarray(binned.label) == label]
        se = np.sqrt(a.var(axis=0) / len(a) + b.var(axis=0) / len(b)) + 1e-12
        assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 5 * se)
        np.testing.assert_allclose(a.mean(axis=0), (T - 1) * classes.probs[n], rtol=0.05, atol=0.05)
        np.testing.assert_allclose(a.var(axis=0), b.var(axis=0), rtol=0.1, atol=1e-12)
    assert abs(float(np.mean(np.asarray(direct.label) == classes.next_token[0])) - 0.5) < 0.015
