"""Training the WikiText model (Sec. 6.6) as the paper's code does: SGD with two parameter groups
(the first layer's first FFN linear map at lr · multiplier, everything else at lr), the gradient
clipped to global norm 0.5 (`torch.nn.utils.clip_grad_norm_`), a constant learning rate, dropout
on; the training windows visited in order, epoch after epoch. Saves the first layer's attention
map on one fixed validation sequence (Fig. 7) and ends with the validation loss and the average
attention entropy over the validation set (Fig. 10).

The learning rates, the multiplier and the clipping norm are traced values: every (lr, seed) of
Fig. 10 trains in one batched, compiled call ([`TextSGD`][] under `dynamics.sweep`).
"""

import dataclasses
from types import MappingProxyType

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jaxtyping import Array, ArrayLike, Float, Int, PRNGKeyArray

import dynamics
from dynamics import Interval, Require, dtype_param, param

from ._config import Corpus
from ._text_data import batchify, num_windows
from ._text_model import TextTransformer, attention_entropy

QUICK_LINES = 2000
"""The quick real-text experiments (the figures' quick sizes and the checks) keep the first 2,000
lines of each split (on the quick corpus: a vocabulary of about 3,200 words)."""

FIG10_LRS = (1.0, 2.0, 3.0, 4.0, 5.0)
"""The learning rates of Fig. 10."""

FIG10_QUICK_LINES = 500
"""Fig. 10's quick runs (its figure's and its check's) keep the first 500 lines of each split: on
the quick corpus a vocabulary of 1,475 words instead of 3,194, and the output layer over the
vocabulary is most of a step's work."""

FIG10_PROBE = 0
"""The validation window of the attention map that Fig. 10's runs save: Fig. 10 reads only the
final entropy, and the default window, 100, lies past the 59 windows of 500 lines."""

FIG10_QUICK_STEPS = 150
"""The steps of Fig. 10's quick runs."""

FIG10_QUICK_SEEDS = 3
"""The seeds of Fig. 10's quick runs, for each learning rate."""

CLIP_EPS = 1e-6
"""The ε of `torch.nn.utils.clip_grad_norm_`: gradients are scaled by min(1, c / (‖g‖ + ε))."""


def clip_by_global_norm(max_norm: Float[ArrayLike, ""]) -> optax.GradientTransformation:
    """`torch.nn.utils.clip_grad_norm_(parameters, max_norm)` as an optax transformation: every
    gradient is multiplied by min(1, max_norm / (‖g‖₂ + 10⁻⁶)), ‖g‖₂ the norm of all of them
    together. `max_norm` may be traced.

    **Arguments:** `max_norm`: the norm c.

    **Returns:** an `optax.GradientTransformation`.

    **Example:** a gradient of norm 5 clipped to 0.5:

        >>> import jax.numpy as jnp
        >>> from tasks import scan_snap
        >>> clip = scan_snap.clip_by_global_norm(0.5)
        >>> grads = {"a": jnp.array([3.0]), "b": jnp.array([0.0, 4.0])}
        >>> clipped, _ = clip.update(grads, clip.init(grads))
        >>> [round(float(x), 6) for x in jnp.concatenate([clipped["a"], clipped["b"]])]
        [0.3, 0.0, 0.4]
    """

    def update(updates, state, params=None):
        del params
        norm = jnp.sqrt(sum(jnp.sum(g**2) for g in jax.tree.leaves(updates)))
        scale = jnp.minimum(max_norm / (norm + CLIP_EPS), 1.0)
        return jax.tree.map(lambda g: g * scale.astype(g.dtype), updates), state

    return optax.GradientTransformation(lambda params: optax.EmptyState(), update)


def text_rates(
    model: TextTransformer, lr: Float[ArrayLike, ""], lr_multiplier: Float[ArrayLike, ""] = 1.0
) -> TextTransformer:
    """The two parameter groups of the paper's SGD as a `dynamics.Rates` tree shaped like `model`:
    `layers[0].linear1` (weight and bias; the code's `transformer_encoder.layers.0.linear1`) at
    lr · lr_multiplier (the code's `lr_z · lr_y_multi_on_z`), every other parameter at lr (`lr_z`).

    **Example:**

        >>> import jax
        >>> from tasks import scan_snap
        >>> key = jax.random.PRNGKey(0)
        >>> model = scan_snap.TextTransformer.init(key, 10, d_model=4, d_hid=4, num_layers=2)
        >>> rates = scan_snap.text_rates(model, 5.0, 2.0)
        >>> rates.layers[0].linear1.weight, rates.layers[1].linear1.weight, rates.embedding
        (10.0, 5.0, 5.0)
    """
    rates = jax.tree.map(lambda _: lr, model)
    fast = lr * lr_multiplier
    first = rates.layers[0].linear1
    return eqx.tree_at(lambda r: r.layers[0].linear1, rates, jax.tree.map(lambda _: fast, first))


def text_optimizer(
    model: TextTransformer,
    lr: Float[ArrayLike, ""],
    lr_multiplier: Float[ArrayLike, ""] = 1.0,
    clip_norm: Float[ArrayLike, ""] = 0.5,
) -> optax.GradientTransformation:
    """The paper's optimiser: [`clip_by_global_norm`][] then plain SGD (no momentum, no weight
    decay) with the rates of [`text_rates`][], constant (the code's StepLR is never stepped).

    **Returns:** an `optax.GradientTransformation`.
    """
    return optax.chain(
        clip_by_global_norm(clip_norm), dynamics.scale_by_group_rates(text_rates(model, lr, lr_multiplier))
    )


def _pad(rows: Int[ArrayLike, "R B"], bptt: int) -> Int[ArrayLike, "R+bptt+1 B"]:
    """`rows` followed by bptt + 1 rows of zeros (done once, on the host for numpy data), so that
    every window can be sliced at the same static shape."""
    xp = np if isinstance(rows, np.ndarray) else jnp
    return xp.concatenate([rows, xp.zeros((bptt + 1, rows.shape[1]), rows.dtype)])


def _window(padded: Int[ArrayLike, "P B"], R: int, window, bptt: int) -> tuple[Array, Array, Array]:
    """Window `window` of `get_batch` on R rows (padded by `_pad`) at static shape: the inputs
    and targets of bptt rows and a mask of the L = min(bptt, R − 1 − i) real ones. Since attention
    is causal and everything else acts per position, the padding changes nothing on the real rows."""
    start = window * bptt
    chunk = jax.lax.dynamic_slice_in_dim(jnp.asarray(padded), start, bptt + 1)
    length = jnp.minimum(bptt, R - 1 - start)
    real = jnp.arange(bptt) < length
    return chunk[:bptt], chunk[1:], real


def _token_losses(logits: Float[Array, "T B V"], targets: Int[Array, "T B"]) -> Float[Array, "T B"]:
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return -jnp.take_along_axis(log_probs, targets[..., None], axis=-1)[..., 0]


def window_loss(
    model: TextTransformer,
    inputs: Int[Array, "T B"],
    targets: Int[Array, "T B"],
    real: Float[Array, " T"] | None = None,
    key: PRNGKeyArray | None = None,
) -> Float[Array, ""]:
    """The mean cross-entropy of one window (`nn.CrossEntropyLoss` over its L × B targets).

    **Arguments:**

    - `model`: the model.
    - `inputs`, `targets`: shape (T, B), the columns are the sequences.
    - `real`: a boolean mask of the rows that count (`None`: all).
    - `key`: dropout on (training) with a key, one subkey per column.

    **Returns:** the mean loss.
    """
    T, B = inputs.shape
    if key is None:
        logits = jax.vmap(model, in_axes=1, out_axes=1)(inputs)
    else:
        keys = jax.random.split(key, B)
        logits = jax.vmap(lambda x, k: model(x, key=k), in_axes=(1, 0), out_axes=1)(inputs, keys)
    losses = _token_losses(logits, targets)
    if real is None:
        return jnp.mean(losses)
    weights = jnp.broadcast_to(real[:, None], (T, B)).astype(losses.dtype)
    return jnp.sum(losses * weights) / jnp.sum(weights)


def evaluate_text(model: TextTransformer, rows: Int[ArrayLike, "R B"], bptt: int = 35) -> dict[str, Array]:
    """The paper's `evaluate` on batchified data (dropout off): every `get_batch` window in order.

    **Arguments:** `model`; `rows`: e.g. `batchify(corpus.valid, 10)`; `bptt`: the window length.

    **Returns:** `loss`: the mean cross-entropy over all targets; `entropy`: per layer, shape
    (num_layers,), the mean over windows of the mean over the window's columns and query rows of
    the attention entropy −Σ a log(a + 10⁻⁸) ([`attention_entropy`][]) of the head-averaged map
    (PyTorch's `average_attn_weights`; the same map with one head).

    **Example:** at initialisation the loss is about ln V and the entropy of the causal attention
    of 35 positions is below its uniform value, mean_t ln(t + 1) ≈ 2.67:

        >>> import jax
        >>> import numpy as np
        >>> from tasks import scan_snap
        >>> model = scan_snap.TextTransformer.init(jax.random.PRNGKey(0), 40, d_model=8, d_hid=8)
        >>> rows = scan_snap.batchify(np.random.default_rng(0).integers(0, 40, 1000).astype(np.int32), 10)
        >>> out = scan_snap.evaluate_text(model, rows)
        >>> round(float(out["loss"]), 1), out["entropy"].shape, bool(2.0 < out["entropy"][0] < 2.67)
        (3.7, (1,), True)
    """
    R = np.shape(rows)[0]
    n = num_windows(R, bptt)
    padded = _pad(rows if isinstance(rows, np.ndarray) else jnp.asarray(rows), bptt)

    def one_window(window):
        inputs, targets, real = _window(padded, R, window, bptt)
        logits, attentions = jax.vmap(lambda x: model(x, return_attention=True), in_axes=1, out_axes=(1, 0))(
            inputs
        )
        losses = _token_losses(logits, targets)
        weights = jnp.broadcast_to(real[:, None], losses.shape).astype(losses.dtype)
        entropies = jnp.stack(
            [jnp.mean(attention_entropy(jnp.mean(a, axis=1)), axis=0) for a in attentions]
        )  # (layers, T): the mean over columns of each query row's entropy
        row_weights = real.astype(entropies.dtype)
        entropy = jnp.sum(entropies * row_weights, axis=-1) / jnp.sum(row_weights)
        return jnp.sum(losses * weights), jnp.sum(weights), entropy

    loss_sums, counts, entropies = jax.lax.map(one_window, jnp.arange(n))
    return {"loss": jnp.sum(loss_sums) / jnp.sum(counts), "entropy": jnp.mean(entropies, axis=0)}


def probe_attention(model: TextTransformer, tokens: Int[ArrayLike, " T"]) -> Float[Array, "H T T"]:
    """The first layer's attention map (per head, dropout off) on one sequence: what Fig. 7 draws."""
    _, attentions = model(jnp.asarray(tokens), return_attention=True)
    return attentions[0]


def train_text(
    key: PRNGKeyArray,
    model: TextTransformer,
    train_rows: Int[ArrayLike, "R B"],
    *,
    lr: Float[ArrayLike, ""],
    lr_multiplier: Float[ArrayLike, ""] = 1.0,
    clip_norm: Float[ArrayLike, ""] = 0.5,
    bptt: int = 35,
    num_steps: int,
    save: dynamics.Save,
) -> dynamics.Run:
    """SGD on the training windows in order (step k trains on window k mod W of W per epoch), with
    [`text_optimizer`][] and dropout drawn from `fold_in(key, k)`; saves what and when `save` says,
    as `dynamics.train` does. A step that would make the parameters non-finite is not taken and the
    run freezes (`stop` = nonfinite), as in `dynamics.train`.

    **Arguments:**

    - `key`: the dropout stream.
    - `model`: the initial model.
    - `train_rows`: batchified training tokens, shape (R, B) ([`batchify`][]).
    - `lr`, `lr_multiplier`, `clip_norm`: see [`text_optimizer`][] (traceable).
    - `bptt`: the window length.
    - `num_steps`: the steps, a multiple of the save period.
    - `save`: a `dynamics.Save` with `every` and `fn(step, model, opt_state)` (and its `carry`
      last, with one), as in `dynamics.train` (both step through `dynamics.scan_with_saves`);
      `fn` `None` saves the model.

    **Returns:** a `dynamics.Run` with `ts` the saved step numbers and `final` =
    `{"model": the final model, "train_loss": the loss of every step, shape (num_steps,)}`.
    """
    R = np.shape(train_rows)[0]
    windows = num_windows(R, bptt)
    if windows < 1:
        raise ValueError(f"the training data has {R} rows: no window of bptt={bptt}")
    rows = train_rows if isinstance(train_rows, np.ndarray) else jnp.asarray(train_rows)
    padded = _pad(rows, bptt)
    optimizer = text_optimizer(model, lr, lr_multiplier, clip_norm)
    loss_and_grad = jax.value_and_grad(window_loss)

    def one_step(carry, step):
        model, opt_state, stop, t_stop = carry
        inputs, targets, real = _window(padded, R, step % windows, bptt)
        loss, grads = loss_and_grad(model, inputs, targets, real, jax.random.fold_in(key, step))
        updates, new_state = optimizer.update(grads, opt_state, model)
        new_model = optax.apply_updates(model, updates)
        running = stop == dynamics.StopReason.completed
        diverged = running & ~dynamics.all_finite(new_model)
        accept = running & ~diverged
        stop = jnp.where(diverged, dynamics.StopReason.nonfinite, stop)
        t_stop = jnp.where(diverged, step, t_stop)
        keep = lambda new, old: jax.tree.map(lambda a, b: jnp.where(accept, a, b), new, old)  # noqa: E731
        return (keep(new_model, model), keep(new_state, opt_state), stop, t_stop), loss

    init = (model, optimizer.init(model), jnp.array(dynamics.StopReason.completed), jnp.array(num_steps))
    carry, ts, values, losses = dynamics.scan_with_saves(one_step, init, save, num_steps=num_steps)
    final, _, stop, t_stop = carry
    return dynamics.Run(
        ts=ts,
        values=values,
        final={"model": final, "train_loss": losses.reshape(num_steps)},
        stop=stop,
        event=jnp.array(-1),
        t_stop=t_stop,
        num_steps=jnp.asarray(t_stop),
    )


def fig10_quick(corpus: Corpus | None = None) -> "TextSGD":
    """Fig. 10's quick simulation, its `lr` to be swept over [`FIG10_LRS`][] with
    [`FIG10_QUICK_SEEDS`][] seeds: 150 steps on `corpus` (default: the first 500 lines of each
    split of the quick corpus), saved once, at the end, with the attention map of validation window
    [`FIG10_PROBE`][]. The runs the figure `scan_snap_fig10` and the check
    `fig10_entropy_falls_with_lr` share at their quick sizes.

    **Example:**

        >>> from tasks import scan_snap
        >>> sim = scan_snap.fig10_quick()
        >>> sim.task.max_lines, sim.num_steps, sim.every
        (500, 150, 150)
    """
    corpus = Corpus(max_lines=FIG10_QUICK_LINES) if corpus is None else corpus
    return TextSGD(
        task=corpus, num_steps=FIG10_QUICK_STEPS, every=FIG10_QUICK_STEPS, probe_window=FIG10_PROBE
    )


class TextSGD(dynamics.AbstractSimulation):
    """The WikiText experiments of Sec. 6.6 (Figs. 7 and 10): the paper's transformer
    ([`TextTransformer`][]) trained by [`train_text`][] on a real corpus, in float32.

    Its task is a [`Corpus`][], held as `task`: `quick` (the bundled public-domain text) or a
    WikiText directory (`wikitext-2` or `wikitext-103`), checked when the config is built, and read
    and tokenized once per process. The defaults are the
    paper's `decoder_wiki.yaml` (d_model = d_hid = 200, one head, one layer, dropout 0.2, batch 20,
    evaluation batch 10, bptt 35, clipping 0.5); Fig. 10 sweeps `lr` ∈ {1, ..., 5} over 5 seeds
    with `lr_multiplier` = 1, Fig. 7 uses lr = 5 with 1 and 3 layers. Seeds differ in the
    initialisation and the dropout masks; the data order is the same for all.

    **Saves:** every `every` steps (or at `log_saves` log-spaced steps), `attention`: the first
    layer's map (num_heads, bptt, bptt) on column 0 of validation window `probe_window` (batchified
    by `eval_batch_size`; the code's `i == 100 * bptt`), and `probe_entropy`: its mean row entropy.
    **Final:** `train_loss` (every step's), `val_loss`, and `val_entropy` (per layer) from
    [`evaluate_text`][] on the validation split after training. With `along.sharpness` it saves also
    `sharpness`, λ_max of the Hessian of the first training window's loss (every column, dropout
    off), and `sharpness_ratio`, its ratio to the edge of the clipped step: λ_max(R¹ᐟ²HR¹ᐟ²)/2 with R
    the two groups' rates times min(1, clip_norm/(‖∇L‖ + 10⁻⁶)) of that loss's gradient
    ([`dynamics.ClippedSteps`][]).

    **Example:** Fig. 10's grid in one compiled call,
    `dynamics.sweep(TextSGD(task=Corpus(source="~/data/wikitext-2"), num_steps=14_900, every=500),
    {"lr": [1.0, 2.0, 3.0, 4.0, 5.0]}, num_seeds=5, chunk_size=25)`.
    """

    task: Corpus = param(
        Corpus(), doc="the corpus: source (quick or a WikiText directory), wikitext_variant, max_lines"
    )
    d_model: int = param(200, Interval(2), doc="model width (even)")
    d_hid: int = param(200, Interval(1), doc="FFN width")
    num_heads: int = param(1, Interval(1), doc="attention heads (divides d_model)")
    num_layers: int = param(1, Interval(1), doc="encoder layers (1; 3 for Fig 7's second row)")
    dropout: float = param(0.2, Interval(0, 1, high_open=True), doc="dropout rate at every site")
    positional: bool = param(True, doc="add the sinusoidal positional encoding")
    lr: float = param(5.0, Interval.positive(), doc="SGD learning rate (lr_z)", traced=True)
    lr_multiplier: float = param(
        1.0,
        Interval.positive(),
        doc="rate of the first FFN linear map / lr (lr_y_multi_on_z)",
        traced=True,
    )
    clip_norm: float = param(0.5, Interval.positive(), doc="gradient clipping norm", traced=True)
    batch_size: int = param(20, Interval(1), doc="training columns")
    eval_batch_size: int = param(10, Interval(1), doc="validation columns")
    bptt: int = param(35, Interval(2), doc="window length T")
    num_steps: int = param(1500, Interval(1), doc="SGD steps (windows in order, epoch after epoch)")
    every: int = param(500, Interval(1), doc="save period in steps (divides num_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    probe_window: int = param(100, Interval(0), doc="validation window of the saved attention map")
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="along.sharpness: the sharpness of the first training window's loss (dropout off) and its "
        "ratio to clipped SGD's edge of stability at every save; no along.flow",
    )
    dtype: str = dtype_param("float32")

    labels = MappingProxyType(
        {
            "probe_entropy": "layer-1 attention entropy on the probe, row mean (nats)",
            "sharpness": "sharpness λ_max of the first training window's loss",
            "sharpness_ratio": "sharpness / clipped SGD's edge of stability",
        }
    )
    small = {
        "task.max_lines": 200,
        "d_model": 8,
        "d_hid": 16,
        "batch_size": 4,
        "eval_batch_size": 2,
        "bptt": 8,
        "num_steps": 2,
        "every": 1,
        "probe_window": 2,
    }
    requires = (
        dynamics.every_divides(),
        Require(("d_model",), lambda d: d % 2 == 0, "d_model must be even (sinusoidal encoding)"),
        Require(("num_heads", "d_model"), lambda h, d: d % h == 0, "num_heads must divide d_model"),
        Require(
            ("along.flow",),
            lambda flow: not flow,
            "along.flow: SGD with clipping and dropout on a stream of windows discretises no gradient flow",
        ),
    )

    def __check_init__(self):
        dynamics.check_params(self)
        try:
            self.task.check()
        except ValueError as err:
            raise ValueError(f"TextSGD.task: {err}") from None

    def steps_per_epoch(self) -> int:
        """The steps of one epoch: the training windows of one pass over the corpus's training
        split at this `batch_size` and `bptt` (the paper trains 5 epochs).

        **Example:** on the quick corpus at the paper's batch 20 and bptt 35:

            >>> from tasks import scan_snap
            >>> scan_snap.TextSGD().steps_per_epoch()
            1153
        """
        return num_windows(len(self.task.load().train) // self.batch_size, self.bptt)

    def run(self, key: PRNGKeyArray) -> dynamics.Run:
        corpus = self.task.load()
        train_rows = batchify(corpus.train, self.batch_size)
        valid_rows = batchify(corpus.valid, self.eval_batch_size)
        full = (valid_rows.shape[0] - 1) // self.bptt
        if self.probe_window >= full:
            raise ValueError(
                f"TextSGD.probe_window must be below {full}, the full validation windows of "
                f"{corpus.name!r} at eval_batch_size={self.eval_batch_size}, bptt={self.bptt}; "
                f"got {self.probe_window}"
            )
        start = self.probe_window * self.bptt
        probe = np.asarray(valid_rows[start : start + self.bptt, 0])
        init_key, dropout_key = jax.random.split(key)
        model = TextTransformer.init(
            init_key,
            len(corpus.vocab),
            d_model=self.d_model,
            num_heads=self.num_heads,
            d_hid=self.d_hid,
            num_layers=self.num_layers,
            dropout=self.dropout,
            positional=self.positional,
            dtype=self.float_dtype,
        )

        def probe_map(step, m: TextTransformer, opt_state) -> dict[str, Array]:
            attention = probe_attention(m, probe)
            return {
                "attention": attention,
                "probe_entropy": jnp.mean(attention_entropy(jnp.mean(attention, 0))),
            }

        save = dynamics.training_save(
            probe_map, num_steps=self.num_steps, every=self.every, log_saves=self.log_saves
        )
        if self.along.sharpness:
            save = self._along_sharpness(save, model, train_rows)
        run = train_text(
            dropout_key,
            model,
            train_rows,
            lr=self.lr,
            lr_multiplier=self.lr_multiplier,
            clip_norm=self.clip_norm,
            bptt=self.bptt,
            num_steps=self.num_steps,
            save=save,
        )
        evaluation = evaluate_text(run.final["model"], valid_rows, self.bptt)
        final = {
            "train_loss": run.final["train_loss"],
            "val_loss": evaluation["loss"],
            "val_entropy": evaluation["entropy"],
        }
        return dataclasses.replace(run, final=final)

    def _along_sharpness(self, save: dynamics.Save, model: TextTransformer, train_rows) -> dynamics.Save:
        """`save` with the sharpness of the first training window's loss (every column, dropout
        off) and its ratio to the edge of clipped SGD with the two groups' rates."""
        inputs, targets, real = _window(_pad(train_rows, self.bptt), train_rows.shape[0], 0, self.bptt)

        def first_window_loss(m: TextTransformer) -> Float[Array, ""]:
            return window_loss(m, inputs, targets, real)

        rates = text_rates(model, self.lr, self.lr_multiplier)
        steps = dynamics.ClippedSteps(rates, self.clip_norm, CLIP_EPS)
        return self.along.save(save, first_window_loss, model, steps, num_steps=self.num_steps)
