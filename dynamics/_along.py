"""What a discrete level records along its run beside its own saves, as one setting of its own:
the sharpness against the edge of stability and the gradient flow from the same start."""

import dataclasses
from collections.abc import Callable

import diffrax
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float, PyTree

from ._flow import _DEFAULT_CONTROLLER, Save
from ._params import Interval, Require, check_params, param
from ._rates import Rates
from ._sharpness import with_flow_distance, with_sharpness
from ._steps import AbstractSteps

_FLOW_CONTROLLERS = {
    jnp.dtype("float64"): _DEFAULT_CONTROLLER,
    jnp.dtype("float32"): diffrax.PIDController(rtol=1e-5, atol=1e-7),
}
"""The step-size controller of the flow alongside, by the dtype of the run: float64 at rtol 1e-8
(that of [`gradient_flow`][]); float32 at rtol 1e-5, where 1e-8 lies below its rounding."""


@dataclasses.dataclass(frozen=True)
class Along:
    """What a discrete level records along its run, beside its own saves: a simulation's field
    `along`, set from the command line as `--set along.sharpness=true`. Off by default; neither
    changes the run.

    **Fields:**

    - `sharpness`: save at every save `sharpness`, the top eigenvalue of the loss's Hessian
      (Lanczos, [`with_sharpness`][dynamics.landscape.with_sharpness]), and with the run's step sizes
      `sharpness_ratio`, its ratio to the edge of stability (λ_max·η/2, ≥ 1 past it; for normalized GD,
      λ_max·η/(2‖∇L‖); for Adam, λ_max(P⁻¹H) over its edge (2 + 2β₁)/((1 − β₁)η)).
    - `lanczos`: the Lanczos steps of each sharpness. Each save's run starts from the top
      eigenvector the last save found, so along a run the estimate keeps converging: 8 to 10 steps
      are enough on a Hessian that changes slowly between saves (`bench/landscape_cost.py`).
    - `flow`: run the gradient flow of the loss from the same start (for normalized GD, the
      normalized flow) and save its distance from the run at t = k steps, `flow_distance`, and
      its loss, `flow_loss` ([`with_flow_distance`][dynamics.landscape.with_flow_distance]).

    **Example:** a level of your own offers both as one field, and adds them to its save:

        >>> import jax.numpy as jnp
        >>> import dynamics
        >>> class Descent(dynamics.AbstractSimulation):
        ...     eta: float = dynamics.param(0.1, dynamics.Interval.positive(), traced=True)
        ...     along: dynamics.Along = dynamics.param(dynamics.Along(), doc="what to record along the run")
        ...     dtype: str = dynamics.dtype_param("float64")
        ...
        ...     def run(self, key):
        ...         loss = lambda theta: 0.5 * theta**2
        ...         start = jnp.array(1.0)
        ...         save = dynamics.Save(every=10, fn=lambda step, theta, args: {"loss": loss(theta)})
        ...         save = self.along.save(save, loss, start, self.eta, num_steps=20)
        ...         return dynamics.train(loss, start, dynamics.gd(self.eta), num_steps=20, save=save)
        >>> sim = dynamics.with_settings(Descent(), {"along.sharpness": True, "along.flow": True})
        >>> values = sim.run(None).values
        >>> sorted(values)
        ['flow_distance', 'flow_loss', 'loss', 'sharpness', 'sharpness_ratio']
        >>> [round(float(v), 6) for v in values["flow_distance"]]
        [0.0, 0.019201, 0.013759]
        >>> round(float(values["sharpness_ratio"][0]), 6)
        0.05
    """

    sharpness: bool = param(
        False,
        doc="save the top eigenvalue of the loss's Hessian (sharpness, Lanczos) and its ratio to the "
        "edge of stability (sharpness_ratio) at every save",
    )
    lanczos: int = param(
        20, Interval(1), doc="Lanczos steps of each sharpness, started from the last save's top eigenvector"
    )
    flow: bool = param(
        False,
        doc="run the gradient flow of the loss from the same start and save its distance from the run "
        "at t = k steps (flow_distance) and its loss (flow_loss) at every save",
    )

    def __post_init__(self):
        check_params(self)

    @staticmethod
    def flow_needs(setting: str, value: str, optimiser: str) -> Require:
        """A level's requirement that `along.flow` is on only while `setting` is `value`: the
        flow alongside is the gradient flow that `optimiser` discretises, and the level's other
        optimisers (momentum, Adam, preconditioned or projected steps) discretise none.

        **Example:**

            >>> import dynamics
            >>> need = dynamics.Along.flow_needs("optimizer", "sgd", "plain SGD")
            >>> need.fields
            ('along.flow', 'optimizer')
            >>> need.message
            'along.flow follows the gradient flow that plain SGD discretises: it needs optimizer=sgd'
        """
        return Require(
            ("along.flow", setting),
            lambda flow, chosen: not flow or chosen == value,
            f"along.flow follows the gradient flow that {optimiser} discretises: it needs {setting}={value}",
        )

    def save(
        self,
        save: Save,
        loss: Callable[[PyTree], Float[Array, ""]],
        start: PyTree,
        step_size: Rates | AbstractSteps = None,
        *,
        num_steps: int,
        params: Callable[[PyTree], PyTree] | None = None,
    ) -> Save:
        """`save`, recording also what this asks for.

        **Arguments:**

        - `save`: what the run records, every `every` steps, as a dict.
        - `loss`: `params -> scalar`, the loss whose Hessian and flow are meant (for stochastic
          training, the population loss).
        - `start`: the run's starting state; only the flow reads it.
        - `step_size`: η, one step size or one per parameter group (a [`Rates`][] prefix); the
          edge of stability of the sharpness ratio is 2/η. Or another optimiser's steps:
          [`NormalizedSteps`][] (the ratio at η/‖∇L‖, the normalized flow), [`AdamSteps`][] (the
          ratio against Adam's edge; no flow), [`ProjectedSteps`][] (steps kept to a subspace).
          `None`: no ratio, and no flow.
        - `num_steps`: the run's steps.
        - `params`: `state -> params`, where the parameters sit in the run's state; default: the
          state itself.

        **Returns:** the [`Save`][] to train with.

        **Raises:** `ValueError` for the flow without a step size.
        """
        if self.flow and step_size is None:
            raise ValueError("the flow alongside runs at the run's step sizes, and none was given")
        if self.sharpness:
            save = with_sharpness(save, loss, step_size, params=params, num_iters=self.lanczos)
        if self.flow:
            where = start if params is None else params(start)
            dtype = jnp.result_type(*jax.tree.leaves(where))
            save = with_flow_distance(
                save,
                loss,
                start,
                step_size,
                num_steps=num_steps,
                params=params,
                stepsize_controller=_FLOW_CONTROLLERS[jnp.dtype(dtype)],
            )
        return save
