"""Multi-stage training: train one block of the parameters, then another, the others frozen;
each stage full-batch or on fresh mini-batches."""

from collections.abc import Callable, Mapping, Sequence

import equinox as eqx
import jax
import optax
from jaxtyping import Array, Float, PRNGKeyArray, PyTree

from ._compiled import one_program
from ._flow import Predicate, Save, save_with_carry
from ._run import Run
from ._train import train


class Stage(eqx.Module):
    """One stage of a multi-stage schedule: a PyTree, whose `key` is an array and everything else
    static.

    **Fields:**

    - `loss`: `params -> scalar`, the full-batch loss of this stage, or `(params, batch) -> scalar`
      with `sample` (it sees all parameters).
    - `optimizer`: the optax transformation applied to the trained block only (so a
      normalisation inside it sees only that block's gradient).
    - `trainable`: a PyTree of booleans, a prefix of the parameters (an `equinox` filter
      spec): `True` where the stage trains, `False` where the parameters are frozen.
    - `num_steps`: the steps of this stage.
    - `save`: a [`Save`][] with the save period `every` and `fn(step, params, opt_state)` of the full
      parameters, as for [`train`][]; default: the full parameters at every step.
    - `events`: named predicates of the full parameters that stop the stage.
    - `sample`: `key -> batch`; when given, step k of the stage descends `loss(params, batch)` on
      the fresh mini-batch `sample(fold_in(stage_key, k))`, as [`train`][] does.
    - `key`: this stage's own mini-batch key (`stage_key`); default: derived from the `key` of
      [`train_stages`][].
    - `prepare`: a map of the full parameters applied once as the stage begins, before they are
      split into the trained and frozen blocks: a rounding, projection or renormalisation of
      what the previous stage learnt (see the example of [`train_stages`][]). The stage starts
      from, and saves at its step 0, the prepared parameters; the previous stage's `Run.final`
      holds them as they were. Default: none.

    **Example:** a stage that trains only `m`, on fresh mini-batches of 8 draws of N(2, 1), so that
    `m` goes to the mean 2 while `s` stays frozen:

        >>> import jax
        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> stage = dynamics.Stage(
        ...     loss=lambda p, batch: 0.5 * jnp.mean((p["m"] - batch) ** 2) + p["s"] ** 2,
        ...     optimizer=dynamics.gd(0.1),
        ...     trainable={"m": True, "s": False},
        ...     num_steps=200,
        ...     save=dynamics.Save(every=100),
        ...     sample=lambda key: 2.0 + jax.random.normal(key, (8,)),
        ...     key=jax.random.PRNGKey(0),
        ... )
        >>> (run,) = dynamics.train_stages({"m": jnp.array(0.0), "s": jnp.array(1.0)}, [stage])
        >>> run.ts.tolist(), bool(abs(run.final["m"] - 2.0) < 0.2), float(run.final["s"])
        ([0, 100, 200], True, 1.0)
    """

    loss: Callable[..., Float[Array, ""]]
    optimizer: optax.GradientTransformation
    trainable: PyTree
    num_steps: int
    save: Save | None = None
    events: Mapping[str, Predicate] | None = None
    sample: Callable[[PRNGKeyArray], PyTree] | None = None
    key: PRNGKeyArray | None = None
    prepare: Callable[[PyTree], PyTree] | None = None


def train_stages(params: PyTree, stages: Sequence[Stage], *, key: PRNGKeyArray | None = None) -> list[Run]:
    """Run `stages` one after the other, each starting where the previous one stopped (mapped by
    its `prepare`, when it has one).

    In each stage the parameters are split with `equinox.partition(params, stage.trainable)`;
    [`train`][] descends the trainable part while the rest is held fixed, and the two are
    recombined. Jit- and vmap-compatible (the stage structure is static). Called outside `jit`, the
    stages compile as one program, which a later call with the same stages on new arrays reuses.

    A stage with `sample` trains on mini-batches drawn from its key `stage_key`: `stage.key`
    when the stage carries one, otherwise `jax.random.fold_in(key, i)` for the stage at index
    `i` of `stages` (counted from 0). Its run is then exactly [`train`][] on the trained block
    with `key=stage_key`. Full-batch stages use no key.

    **Arguments:**

    - `params`: the initial parameters.
    - `stages`: the [`Stage`][]s in order (at least one).
    - `key`: the PRNG key of the mini-batch streams of the stages that sample and carry no key.

    **Returns:** one [`Run`][] per stage; `Run.final` and the saved values hold the full
    parameters (or `save` of them), and step numbers restart at 0 in every stage.

    **Example:** train `x` (towards (3, 4)), rescale it to unit norm, then train `y` (towards 1):

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> def loss(p):
        ...     return 0.5 * jnp.sum((p["x"] - jnp.array([3.0, 4.0])) ** 2) + 0.5 * (p["y"] - 1.0) ** 2
        >>> stages = [
        ...     dynamics.Stage(loss, dynamics.gd(0.5), {"x": True, "y": False}, num_steps=30),
        ...     dynamics.Stage(
        ...         loss,
        ...         dynamics.gd(0.5),
        ...         {"x": False, "y": True},
        ...         num_steps=30,
        ...         prepare=lambda p: {**p, "x": p["x"] / jnp.linalg.norm(p["x"])},
        ...     ),
        ... ]
        >>> first, second = dynamics.train_stages({"x": jnp.zeros(2), "y": jnp.array(0.0)}, stages)
        >>> [round(float(v), 4) for v in first.final["x"]], float(first.final["y"])
        ([3.0, 4.0], 0.0)
        >>> [round(float(v), 4) for v in second.final["x"]], round(float(second.final["y"]), 4)
        ([0.6, 0.8], 1.0)
    """
    if not stages:
        raise ValueError("stages must hold at least one Stage, got none")
    for index, stage in enumerate(stages):
        if stage.sample is not None and stage.key is None and key is None:
            raise ValueError(f"stage {index} samples mini-batches: give the Stage or train_stages a key")
        if stage.save is not None and stage.save.ts is not None:
            raise ValueError(f"stage {index} saves every few steps or at steps, not at times ts")
    return _train_stages(params, tuple(stages), key, tuple(tuple(stage.events or ()) for stage in stages))


@one_program
def _train_stages(
    params: PyTree,
    stages: tuple[Stage, ...],
    key: PRNGKeyArray | None,
    event_orders: tuple[tuple[str, ...], ...],
) -> list[Run]:
    """[`train_stages`][] after its checks, compiled as one program: `event_orders` holds each
    stage's event names in the order given, which its `events` lose as JAX's trees sort a dict."""
    runs = []
    for index, (stage, order) in enumerate(zip(stages, event_orders)):
        stage_key = stage.key
        if stage.sample is not None and stage_key is None:
            stage_key = jax.random.fold_in(key, index)
        if stage.prepare is not None:
            params = stage.prepare(params)
        trained, frozen = eqx.partition(params, stage.trainable)

        def full(part, frozen=frozen):
            return eqx.combine(part, frozen)

        save = stage.save or Save()
        start, fn = save_with_carry(save)
        events = {name: (lambda part, pred=stage.events[name], full=full: pred(full(part))) for name in order}
        run = train(
            lambda part, *batch, loss=stage.loss, full=full: loss(full(part), *batch),
            trained,
            stage.optimizer,
            num_steps=stage.num_steps,
            key=stage_key,
            sample=stage.sample,
            save=Save(
                every=save.every,
                steps=save.steps,
                fn=lambda t, part, args, kept, fn=fn, full=full: fn(t, full(part), args, kept),
                carry=lambda part, start=start, full=full: start(full(part)),
            ),
            events=events,
        )
        params = full(run.final)
        runs.append(
            Run(
                ts=run.ts,
                values=run.values,
                final=params,
                stop=run.stop,
                event=run.event,
                t_stop=run.t_stop,
                num_steps=run.num_steps,
                event_names=run.event_names,
            )
        )
    return runs
