"""Sparse token selection: the one-hot PE as slots (`SlotPE`) is the dense PE read another way. The
same key gives the same matrix; the transformer's output, attention, loss and gradient equal the
dense ones for every config field the slots touch; the `top_k` subset equals the sorted one."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tasks.sparse_token_selection as sts
from tests.helpers import tree_allclose


@st.composite
def onehot_configs(draw):
    """A one-hot-family config with every field the slot path reads, and a served length."""
    T = draw(st.integers(3, 9))
    sampler = draw(st.sampled_from(sts.ONEHOT_FAMILIES))
    N = draw(st.integers(T, 2 * T + 3)) if sampler == "dictionary_onehot" else T
    cfg = sts.STSConfig(
        d=draw(st.integers(1, 4)),
        T=T,
        q=draw(st.integers(1, T - 1)),
        pe_sampler=sampler,
        pe_dim=N,
        rho=draw(st.floats(0.25, 3.0)),
        fixed_pe=draw(st.booleans()),
        keys=draw(st.sampled_from(sts.KEY_SETS)),
        x_query_mode=draw(st.sampled_from(sts.X_QUERY_MODES)),
    )
    return cfg, draw(st.integers(T, cfg.lengths_served))


@jax.jit
def _model_outputs(model, batch):
    """The outputs and attentions on `batch`, and the loss and gradient on its antithetic pairs."""
    per_example = jax.vmap(lambda *ex: (model(*ex), model.attention(*ex)))(*batch)
    return per_example, jax.value_and_grad(sts.loss)(model, sts.antithetic(batch))


@pytest.mark.slow
@settings(max_examples=3, deadline=None)  # each example compiles its own shapes
@given(case=onehot_configs(), seed=st.integers(0, 2**31 - 1))
def test_slots_are_the_dense_pe_and_model(case, seed):
    cfg, T_eval = case
    key = jax.random.PRNGKey(seed)
    E = sts.sample_pe(cfg, key, T_eval)
    np.testing.assert_array_equal(np.asarray(sts.sample_slots(cfg, key, T_eval).dense(dtype=E.dtype)), E)

    dense = sts.sample(cfg, key, 5, T=T_eval)
    slotted = sts.sample(cfg, key, 5, T=T_eval, slots=True)
    np.testing.assert_array_equal(jax.vmap(lambda s: s.dense(dtype=dense.E.dtype))(slotted.E), dense.E)
    assert tree_allclose((dense.X, dense.y, dense.x_query), (slotted.X, slotted.y, slotted.x_query))

    # large weights: the attention is far from uniform, so a wrong slot shows
    model = sts.random_init(cfg.replace(init_scale=2.0), jax.random.fold_in(key, 1))
    assert tree_allclose(_model_outputs(model, slotted), _model_outputs(model, dense))


@pytest.mark.slow
def test_mc_loss_with_slots_equals_dense():
    cfg = sts.STSConfig(d=3, T=10, q=3, pe_dim=25)
    model = sts.random_init(cfg.replace(init_scale=1.0), jax.random.PRNGKey(0))
    for kw in ({"T": 20}, {"q": jnp.asarray(4)}):
        dense, slotted = (
            jax.jit(lambda m, k, s=s: sts.mc_loss(m, cfg, k, 32, chunk=16, slots=s, **kw))(
                model, jax.random.PRNGKey(1)
            )
            for s in (False, True)
        )
        assert tree_allclose(dense, slotted)


def test_sample_slots_refuses_other_pe_and_unserved_lengths():
    with pytest.raises(ValueError, match="slots exist only"):
        sts.sample_slots(sts.STSConfig(d=2, T=4, q=2, pe_sampler="haar_orthonormal", pe_dim=6), None)
    with pytest.raises(ValueError, match="exceeds the lengths"):
        sts.sample_slots(sts.STSConfig(d=2, T=4, q=2, pe_dim=6), jax.random.PRNGKey(0), T=7)


@pytest.mark.slow
@settings(max_examples=6, deadline=None)
@given(T=st.integers(2, 64), data=st.data())
def test_subset_by_top_k_equals_subset_by_ranks(T, data):
    q = data.draw(st.integers(1, T - 1))
    keys = jax.random.split(jax.random.PRNGKey(data.draw(st.integers(0, 2**31 - 1))), 64)
    by_top_k = jax.vmap(lambda k: sts.random_subset(k, T, q))(keys)
    by_ranks = jax.vmap(lambda k: sts.random_subset(k, T, jnp.asarray(q)))(keys)
    np.testing.assert_array_equal(by_top_k, by_ranks)
    np.testing.assert_array_equal(np.asarray(by_top_k).sum(1), q)


def test_slot_pe_example_runs():
    test = doctest.DocTestParser().get_doctest(sts.SlotPE.__doc__, {"SlotPE": sts.SlotPE}, "SlotPE", None, 0)
    assert test.examples and doctest.DocTestRunner().run(test).failed == 0
