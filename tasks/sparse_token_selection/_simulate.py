"""The ways of training of sparse token selection as simulations: `reduced_flow` the two-scalar
gradient flow of Theorem 1 with its loss-threshold event, `online` mini-batch GD or Adam on fresh
samples (Figs. 1-5), `fcn` the fully-connected baseline trained with Adam."""

from types import MappingProxyType

import diffrax
import jax.numpy as jnp

import dynamics
from dynamics import Interval, OneOf, Require, dtype_param, param

from ._config import ORTHONORMAL_PE, STSConfig, lengths_served
from ._fcn import fcn_run, fcn_validation_loss
from ._online import (
    BLOCKS,
    INITS,
    OPTIMIZERS,
    online_run,
    validation_lengths,
    validation_loss,
    validation_sparsities,
)
from ._reduced import reduced_flow, reduced_state_loss

SOLVERS = {"kvaerno5": diffrax.Kvaerno5, "tsit5": diffrax.Tsit5}
"""The ODE solvers of [`ReducedFlow`][] by name."""


class ReducedFlow(dynamics.AbstractSimulation):
    """Gradient flow of the full matrices from zero init on the invariant set, run on the two
    scalars (γ, a) (Lemma 1): time t = η k, rates 1/d and 1/‖M‖_F², exactly orthonormal PE; it
    stops early when the loss falls below `eps` (the event `loss_below`, Theorem 1's t_ε).
    Deterministic: every seed gives the same run. Saves `loss`, `gamma`, `a` at `num_saves`
    log-spaced times from t = 1 to `t1` (after an early stop they hold `inf`).

    The event is tested at the end of each solver step, so `t_stop` is resolved to about one step
    (≈ 1% of t near t = 5e6 with the defaults); the implicit solver's iterations run batched under
    `vmap`, so runs in differently composed batches may stop a few steps apart.

    **Example:** `dynamics.simulate(ReducedFlow(eps=1e-5), num_seeds=1)["t_stop"]` ≈ (T − 1)/(4ε).
    """

    task: STSConfig = param(
        STSConfig(pe_sampler="onehot"),
        doc="the STS_q instance: d, T, q, an exactly orthonormal PE (pe_sampler, pe_dim) and rho; "
        "keys tokens and x_query_mode zeros, Theorem 1's",
    )
    t1: float = param(1e7, Interval(1, low_open=True), doc="end time t = η k", traced=True)
    eps: float = param(
        0.0, Interval(0), doc="stop once the loss is below eps (Theorem 1's t_ε); 0: never", traced=True
    )
    num_saves: int = param(141, Interval(2), doc="log-spaced saves on [1, t1]")
    solver: str = param("kvaerno5", OneOf(*SOLVERS), doc="kvaerno5 (implicit, long horizons) or tsit5")
    rtol: float = param(1e-10, Interval.positive(), doc="relative tolerance of the step-size controller")
    atol: float = param(1e-12, Interval.positive(), doc="absolute tolerance of the step-size controller")
    max_steps: int = param(200_000, Interval(1), doc="the solver's step budget")
    dtype: str = dtype_param("float64")
    seed_hint = "the reduced flow from zero init has no randomness: sweep its settings instead"

    event_names = ("loss_below",)
    requires = (
        Require(
            ("task.pe_sampler",),
            lambda sampler: sampler in ORTHONORMAL_PE,
            f"the reduced loss needs an exactly orthonormal PE ({', '.join(ORTHONORMAL_PE)})",
        ),
        Require(
            ("task.keys", "task.x_query_mode"),
            lambda keys, x_query: (keys, x_query) == ("tokens", "zeros"),
            "the reduced flow is Theorem 1's model: keys tokens and x_query_mode zeros",
        ),
    )
    small = {"task.d": 2, "task.T": 10, "task.q": 2, "t1": 1e4, "num_saves": 9, "solver": "tsit5"}
    labels = MappingProxyType(
        {
            "loss": "exact population loss ½‖f − target‖² (Lemma 1)",
            "gamma": "value scale γ (V = [γ·I, 0])",
            "a": "attention scale a (PE block of W = a·M)",
        }
    )

    def run(self, key) -> dynamics.Run:
        del key
        dtype = self.float_dtype
        t1 = jnp.asarray(self.t1, dtype)
        # 10^log10(t1) may round above t1 (t1 = 5000), where the solver refuses to save.
        save_ts = jnp.minimum(jnp.logspace(0.0, jnp.log10(t1), self.num_saves, dtype=dtype), t1)
        return reduced_flow(
            self.task,
            t1,
            save_ts,
            eps=self.eps,
            stepsize_controller=diffrax.PIDController(rtol=self.rtol, atol=self.atol),
            max_steps=self.max_steps,
            solver=SOLVERS[self.solver](),
            dtype=dtype,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The population loss of the two scalars `{"gamma", "a"}` (the final state), the loss the
        flow descends and saves."""
        del key
        return dynamics.Landscape(reduced_state_loss(self.task))


class Online(dynamics.AbstractSimulation):
    """Online training of the transformer: `num_steps` steps of mini-batch GD or Adam on
    `batch_size` fresh STS_q examples each (Figs. 1-5). Saves every `every` steps (or at
    `log_saves` log-spaced steps) the Monte-Carlo
    validation loss `loss` at (T, q), `loss_T` at `num_T_tests` longer lengths (see
    [`validation_lengths`][]), `loss_q` at `num_q_tests` larger q (see [`validation_sparsities`][])
    and the direction cosines `cos_W`, `cos_W_centred`, `cos_V`; the final state is the model.
    With `along.sharpness` it saves also `sharpness` (λ_max of the validation loss's Hessian) and,
    for `gd`, `sharpness_ratio` (λ_max·lr/2, ≥ 1 past the edge of stability); with `along.flow`
    (`gd` only), `flow_distance` from the gradient flow of the validation loss started at the same
    point, at t = k·lr, and `flow_loss` (`dynamics.Along`).

    The defaults are the figures' reduced size (d = 5, T = 20, q = 3, stochastic dictionary one-hot
    PE with N = 40 slots, GD at lr 1 from zero init); the paper's is T = 200, q = 3, N = 400.

    **Example:** `dynamics.simulate(Online(optimizer="adam", lr=1e-2, init="random"), num_seeds=3)`.
    """

    task: STSConfig = param(
        STSConfig(d=5, T=20, pe_dim=40), doc="the STS_q instance, its PE and the transformer's options"
    )
    optimizer: str = param("gd", OneOf(*OPTIMIZERS), doc="gd (mini-batch GD) or adam (β = 0.9, 0.999)")
    lr: float = param(1.0, Interval.positive(), doc="learning rate", traced=True)
    init: str = param("zeros", OneOf(*INITS), doc="zeros (Theorem 1's) or random (N(0, init_scale²))")
    blocks: str = param(
        "all", OneOf(*BLOCKS), doc="all (the figures' model) or definition4 (only W_EE and V_X trained)"
    )
    batch_size: int = param(128, Interval(1), doc="fresh examples per step")
    num_steps: int = param(2000, Interval(1), doc="optimizer steps")
    every: int = param(100, Interval(1), doc="save period in steps (divides num_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    num_T_tests: int = param(
        4, Interval(0), doc="validation lengths above T, up to the longest the PE serves"
    )
    num_q_tests: int = param(3, Interval(0), doc="validation subset sizes q + 1, ..., q + num_q_tests")
    num_eval: int = param(512, Interval(1), doc="antithetic pairs per validation point")
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="along.sharpness: the validation loss's sharpness (and with gd its ratio to 2/lr) at every "
        "save; along.flow (gd): the validation loss's gradient flow from the same start, its distance",
    )
    dtype: str = dtype_param("float32")

    small = {
        "task.d": 2,
        "task.T": 6,
        "task.q": 2,
        "task.pe_dim": 8,
        "batch_size": 8,
        "num_steps": 4,
        "every": 2,
        "num_T_tests": 1,
        "num_q_tests": 1,
        "num_eval": 8,
    }
    labels = MappingProxyType(
        {
            "loss": "validation loss ½‖f − target‖² at (T, q), Monte Carlo",
            "loss_T": "validation loss at longer lengths T′ > T",
            "loss_q": "validation loss at larger subset sizes q′ > q",
            "cos_W": "Frobenius cosine of W and W* (identity PE block)",
            "cos_W_centred": "Frobenius cosine of W and W* (centred PE block M)",
            "cos_V": "Frobenius cosine of V and V* = [I, 0]",
            "sharpness": "top Hessian eigenvalue λmax of the validation loss",
            "sharpness_ratio": "sharpness over the edge of stability (≥ 1 past it)",
            "flow_distance": "distance ‖θ − θflow‖ from gradient flow at t = k·lr",
            "flow_loss": "validation loss along the gradient flow at t = k·lr",
        }
    )
    requires = (
        dynamics.every_divides(),
        Require(
            ("num_T_tests", "task.T", "task.pe_sampler", "task.pe_dim", "task.max_length"),
            lambda n, T, s, m, L: n <= lengths_served(T, s, m, L) - T,
            "num_T_tests must be <= (the longest length the PE serves) − T",
        ),
        Require(
            ("num_q_tests", "task.q", "task.T"), lambda n, q, T: q + n < T, "q + num_q_tests must be < T"
        ),
        dynamics.Along.flow_needs("optimizer", "gd", "GD"),
    )

    @property
    def T_tests(self) -> tuple[int, ...]:
        """The validation lengths of `loss_T`."""
        return validation_lengths(self.task, self.num_T_tests)

    @property
    def q_tests(self) -> tuple[int, ...]:
        """The validation subset sizes of `loss_q`."""
        return validation_sparsities(self.task, self.num_q_tests)

    def run(self, key) -> dynamics.Run:
        return online_run(
            self.task,
            key,
            optimizer=self.optimizer,
            lr=self.lr,
            batch_size=self.batch_size,
            num_steps=self.num_steps,
            every=self.every,
            log_saves=self.log_saves,
            init=self.init,
            blocks=self.blocks,
            T_tests=self.T_tests,
            q_tests=self.q_tests,
            num_eval=self.num_eval,
            dtype=self.float_dtype,
            along=self.along,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The Monte-Carlo validation loss at (T, q) on the run's fixed draws (`validation_loss`,
        the saved `loss`) of the model (the final state), at the step size `lr` for `gd`."""
        return dynamics.Landscape(
            validation_loss(
                self.task, key, blocks=self.blocks, num_eval=self.num_eval, dtype=self.float_dtype
            ),
            step_size=(lambda final: self.lr) if self.optimizer == "gd" else None,
        )


class FCNTraining(dynamics.AbstractSimulation):
    """The fully-connected baseline: a ReLU MLP with hidden widths (`width`, `width`) on
    vec(X) ⊕ 1_y, trained with Adam on `batch_size` fresh STS_q examples per step (one-hot PE; the
    FCN does not see it). Saves every `every` steps (or at `log_saves` log-spaced steps) its
    Monte-Carlo population loss `loss` and the
    standard error `loss_se`; the final state is the MLP's arrays. Proposition C bounds the loss
    below by (T − q)(Td − width) / (2qT(T − 1)) whatever the training.
    """

    task: STSConfig = param(
        STSConfig(d=4, T=8, q=2, pe_sampler="onehot"),
        doc="the STS_q instance: the FCN reads d, T and q and sees no PE (pe_sampler onehot)",
    )
    width: int = param(16, Interval(1), doc="first-layer width m (the bound needs m of order Td)")
    lr: float = param(3e-3, Interval.positive(), doc="Adam's learning rate", traced=True)
    batch_size: int = param(256, Interval(1), doc="fresh examples per step")
    num_steps: int = param(3000, Interval(1), doc="Adam steps")
    every: int = param(300, Interval(1), doc="save period in steps (divides num_steps)")
    log_saves: int | None = dynamics.log_saves_param()
    num_eval: int = param(4096, Interval(1), doc="antithetic validation pairs")
    along: dynamics.Along = param(
        dynamics.Along(),
        doc="what else to record of the validation loss along the run: its sharpness against Adam's "
        "preconditioned edge (along.flow: Adam follows no flow)",
    )
    dtype: str = dtype_param("float32")

    small = {
        "task.d": 2,
        "task.T": 4,
        "task.q": 2,
        "width": 4,
        "batch_size": 8,
        "num_steps": 4,
        "every": 2,
        "num_eval": 8,
    }
    labels = MappingProxyType(
        {
            "loss": "validation loss ½‖f − target‖², Monte Carlo",
            "loss_se": "standard error of the Monte-Carlo loss",
            "sharpness": "top Hessian eigenvalue λmax of the validation loss",
            "sharpness_ratio": "λmax(P⁻¹H) over Adam's edge (2 + 2β₁)/((1 − β₁)η)",
        }
    )
    requires = (
        Require(
            ("task.pe_sampler",),
            lambda sampler: sampler == "onehot",
            "the FCN sees no PE: pe_sampler must be onehot",
        ),
        dynamics.every_divides(),
        Require(
            ("along.flow",),
            lambda flow: not flow,
            "along.flow follows the gradient flow an optimiser discretises, and the FCN trains with "
            "Adam, which discretises none",
        ),
    )

    def run(self, key) -> dynamics.Run:
        return fcn_run(
            self.task,
            self.width,
            key,
            num_steps=self.num_steps,
            every=self.every,
            log_saves=self.log_saves,
            batch_size=self.batch_size,
            lr=self.lr,
            num_eval=self.num_eval,
            dtype=self.float_dtype,
            along=self.along,
        )

    def landscape(self, key) -> dynamics.Landscape:
        """The saved `loss`, the Monte-Carlo validation loss on the run's fixed draws, as a
        function of the MLP's arrays (the final state); no step size (Adam)."""
        return dynamics.Landscape(
            fcn_validation_loss(self.task, self.width, key, num_eval=self.num_eval, dtype=self.float_dtype)
        )


SIMULATIONS = {"reduced_flow": ReducedFlow, "online": Online, "fcn": FCNTraining}
"""The ways of training of sparse token selection by level name (the first is the default)."""
