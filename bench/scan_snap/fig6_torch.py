"""Fig. 6 sweep in PyTorch: the per-run training loop of the official Scan and Snap code
(`decoder_only.py`), one run at a time, as a baseline for `bench/scan_snap/fig6_end_to_end.py`.

The setting: Syn-Medium (`num_last` query tokens, two classes each, 10 common tokens, 10 distinct
tokens per class; M = 33, 79, 125, 240 for `num_last` = 1, 3, 5, 10); Y and Z (M × M) i.i.d.
U(−1/√M, 1/√M) (`nn.Linear`'s default); `steps` steps of `torch.optim.SGD` with momentum 0.9 and
two parameter groups (lr η_Y = η_Z · ratio for Y, η_Z for Z); every step a fresh batch of
`batch_size` sequences, each of a class drawn uniformly, its T − 1 contextual tokens drawn i.i.d.
with replacement from the class's distribution (`torch.multinomial`), query ψ(n) at position T,
label n; loss = mean cross-entropy of the logits Y^T LN(X^T b_T) over all M tokens, with b_T the
softmax over the T − 1 contextual positions of z_{x_T, x_t} (the query does not attend to itself)
and LN(v) = v / ||v||₂; float32. A run returns the final average entropy of the attention on the
distinct tokens (the quantity Fig. 6 plots).

What differs from the official code is only how the same arithmetic is laid out: the batch is
sampled without a Python loop over samples, and the attention is a gather of Z[x_T, x_t] plus a
scatter-add of the softmax weights into a (B, M) vector, instead of (B, T, M) one-hot products.
No custom kernels, no `torch.compile`, the default number of threads. Each run seeds its own
`torch.Generator` with its seed (shared by every rate pair, as `seed=1..10` in the official
sweep), which draws the initial Y, Z and then every batch. The loop runs on the CPU by default, or
with `--device cuda` on a GPU (each run's `torch.Generator` on the GPU: other random streams than
on the CPU).

Run `python bench/scan_snap/fig6_torch.py --help` for the flags.
"""

import argparse
import dataclasses
import math
import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from figures.scan_snap import SweepConfig
from tasks.scan_snap import Dataset2

PAPER = SweepConfig.paper(full=True)
"""The paper's sweep, the one `attnflow figures scan_snap_fig6 --full` runs."""
NUM_LAST, ETA_Z, RATIOS, SEEDS = PAPER.num_lasts, PAPER.eta_zs, PAPER.ratios, PAPER.seeds
MOMENTUM = PAPER.level.momentum


@dataclasses.dataclass(frozen=True)
class Classes:
    """The K sequence classes over M tokens.

    - `probs`: (K, M), row n = P(· | n).
    - `query`: (K,), the query token ψ(n).
    - `next_token`: (K,), the label of class n.
    - `dt_mask`: (K, M) bool, the distinct tokens of class n (tokens of no other class).
    """

    probs: torch.Tensor
    query: torch.Tensor
    next_token: torch.Tensor
    dt_mask: torch.Tensor

    @property
    def K(self) -> int:
        return self.probs.shape[0]

    @property
    def M(self) -> int:
        return self.probs.shape[1]


def syn_medium(num_last: int, dtype: torch.dtype = torch.float32, device: str = "cpu") -> Classes:
    """Syn-Medium as the official `Dataset2` builds it (`tasks.scan_snap.Dataset2.syn_medium`, plain
    numpy), as torch tensors on `device`."""
    classes = Dataset2.syn_medium(num_last).build()
    return Classes(
        probs=torch.tensor(classes.probs, dtype=dtype, device=device),  # copies: the arrays are read-only
        query=torch.tensor(classes.query, device=device),
        next_token=torch.tensor(classes.next_token, device=device),
        dt_mask=torch.tensor(classes.distinct_mask(), device=device),
    )


def sample_batch(
    classes: Classes, batch_size: int, T: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch: each sample's class uniform, its T − 1 contextual tokens i.i.d. with replacement
    from the class's distribution.

    **Returns:** `tokens` (B, T − 1), `query` (B,) = ψ(class), `label` (B,) = the class's next token.
    """
    cls = torch.randint(classes.K, (batch_size,), generator=generator, device=classes.probs.device)
    tokens = torch.multinomial(classes.probs[cls], T - 1, replacement=True, generator=generator)
    return tokens, classes.query[cls], classes.next_token[cls]


def loss_fn(
    Y: torch.Tensor, Z: torch.Tensor, tokens: torch.Tensor, query: torch.Tensor, label: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy of the logits Y^T LN(X^T b_T) over all M tokens.

    b_T = softmax_t z_{x_T, x_t} over the T − 1 contextual positions (gathered from Z), and
    X^T b_T = Σ_t b_{tT} e_{x_t} (the weights scatter-added into a (B, M) vector).
    """
    # z_{x_T, x_t} = Z[query, tokens]: the query rows, then the contextual columns.
    b = torch.softmax(Z.index_select(0, query).gather(1, tokens), dim=-1)
    v = torch.zeros(tokens.shape[0], Z.shape[0], dtype=b.dtype, device=b.device).scatter_add(1, tokens, b)
    v = v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return F.cross_entropy(v @ Y, label)


def init_params(
    M: int, generator: torch.Generator, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """Y, Z with every entry i.i.d. U(−1/√M, 1/√M), Y drawn first, on `generator`'s device; both
    require grad."""
    bound = 1.0 / math.sqrt(M)
    device = generator.device
    Y = torch.empty(M, M, dtype=dtype, device=device).uniform_(-bound, bound, generator=generator)
    Z = torch.empty(M, M, dtype=dtype, device=device).uniform_(-bound, bound, generator=generator)
    return Y.requires_grad_(), Z.requires_grad_()


def make_optimizer(
    Y: torch.Tensor, Z: torch.Tensor, eta_y: float, eta_z: float, momentum: float = MOMENTUM
) -> torch.optim.SGD:
    """SGD with heavy-ball momentum (v ← μv + g, p ← p − ηv), one parameter group per matrix."""
    return torch.optim.SGD(
        [{"params": [Y], "lr": eta_y}, {"params": [Z], "lr": eta_z}], lr=eta_z, momentum=momentum
    )


def train_step(
    Y: torch.Tensor,
    Z: torch.Tensor,
    optimizer: torch.optim.Optimizer,
    tokens: torch.Tensor,
    query: torch.Tensor,
    label: torch.Tensor,
) -> torch.Tensor:
    """One optimiser step on one batch; leaves the batch's gradients in `Y.grad`, `Z.grad`.

    **Returns:** the loss before the step (detached).
    """
    optimizer.zero_grad()
    loss = loss_fn(Y, Z, tokens, query, label)
    loss.backward()
    optimizer.step()
    return loss.detach()


@torch.no_grad()
def distinct_token_entropy(Z: torch.Tensor, classes: Classes) -> float:
    """Average entropy (nats) of the attention on the distinct tokens: for each class n,
    p_l ∝ P(l | n) e^{z_{ψ(n), l}} over its distinct tokens l only, H_n = −Σ p_l ln p_l, averaged
    over the classes that have distinct tokens (2.1513 at Z = 0 on Syn-Medium)."""
    z = Z[classes.query]
    mask = classes.dt_mask
    has_dt = mask.any(dim=-1)
    probs = classes.probs.to(z.dtype)
    log_scores = torch.where(mask, torch.log(torch.where(mask, probs, 1.0)) + z, -math.inf)
    log_p = torch.log_softmax(torch.where(has_dt[:, None], log_scores, 0.0), dim=-1)
    log_p = torch.where(mask, log_p, 0.0)
    entropy = -(log_p.exp() * log_p * mask).sum(dim=-1)
    return float(entropy[has_dt].mean())


def train_run(
    classes: Classes,
    eta_z: float,
    ratio: float,
    seed: int,
    *,
    steps: int = 100,
    batch_size: int = 128,
    T: int = 128,
    dtype: torch.dtype = torch.float32,
) -> float:
    """One run: init from `seed`, `steps` SGD-momentum steps at η_Z = `eta_z`, η_Y = `eta_z` · `ratio`,
    on the device of `classes` (its own `torch.Generator` there).

    **Returns:** the final distinct-token entropy (NaN if the run diverged).
    """
    generator = torch.Generator(device=classes.probs.device).manual_seed(seed)
    Y, Z = init_params(classes.M, generator, dtype)
    optimizer = make_optimizer(Y, Z, eta_y=eta_z * ratio, eta_z=eta_z)
    for _ in range(steps):
        train_step(Y, Z, optimizer, *sample_batch(classes, batch_size, T, generator))
    return distinct_token_entropy(Z.detach(), classes)


def run_sweep(
    num_lasts: Sequence[int] = NUM_LAST,
    eta_zs: Sequence[float] = ETA_Z,
    ratios: Sequence[float] = RATIOS,
    seeds: Sequence[int] = SEEDS,
    steps: int = 100,
    batch_size: int = 128,
    T: int = 128,
    dtype: torch.dtype = torch.float32,
    device: str = "cpu",
) -> tuple[np.ndarray, np.ndarray]:
    """Every (vocabulary, η_Z, ratio, seed) run, one after the other, on `device` (`"cuda"`: the
    same loop on a GPU; each run ends by reading its entropy back, so its time is all counted).

    **Returns:** `(entropy, seconds)`: the final entropies, shape (V, Z, R, S), and the wall time
    of each vocabulary, shape (V,).
    """
    entropy = np.full((len(num_lasts), len(eta_zs), len(ratios), len(seeds)), np.nan)
    seconds = np.zeros(len(num_lasts))
    for v, num_last in enumerate(num_lasts):
        start = time.perf_counter()
        classes = syn_medium(num_last, dtype, device)
        for z, eta_z in enumerate(eta_zs):
            for r, ratio in enumerate(ratios):
                for s, seed in enumerate(seeds):
                    entropy[v, z, r, s] = train_run(
                        classes, eta_z, ratio, seed, steps=steps, batch_size=batch_size, T=T, dtype=dtype
                    )
        seconds[v] = time.perf_counter() - start
    return entropy, seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Fig. 6 sweep in PyTorch, one run at a time (the official code's loop).",
    )
    parser.add_argument(
        "--num-last", type=int, nargs="+", default=list(NUM_LAST), help="Syn-Medium vocabularies (1 3 5 10)"
    )
    parser.add_argument("--eta-z", type=float, nargs="+", default=list(ETA_Z), help="default 0.5 1 2 3")
    parser.add_argument(
        "--ratios", type=float, nargs="+", default=list(RATIOS), help="eta_y/eta_z, default 1 2 5 10"
    )
    parser.add_argument("--seeds", type=int, default=10, help="seeds 1..N per rate pair (default 10)")
    parser.add_argument("--steps", type=int, default=100, help="SGD-momentum steps per run (default 100)")
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--T", type=int, default=128, help="sequence length (query position)")
    parser.add_argument("--device", default="cpu", help="torch device: cpu (default) or cuda")
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.steps < 1 or args.batch_size < 1 or args.T < 2:
        parser.error("--seeds, --steps, --batch-size must be >= 1 and --T >= 2")
    return args


def main(argv: Sequence[str] | None = None) -> dict:
    """Run the sweep and print, per vocabulary, its time and the mean entropy over seeds of each
    (η_Z, ratio).

    **Returns:** a dict: `entropy` (V, Z, R, S), `seconds` (V,), `seconds_per_run` (V,), and the
    grid (`num_lasts`, `eta_zs`, `ratios`, `seeds`).
    """
    args = parse_args(argv)
    seeds = tuple(range(1, args.seeds + 1))
    print(
        f"Fig 6 sweep in PyTorch {torch.__version__}: {len(args.eta_z)}x{len(args.ratios)} (eta_z, ratio) "
        f"pairs x {args.seeds} seeds, {args.steps} SGD-momentum steps, batch {args.batch_size}, T {args.T}, "
        f"float32, one run at a time, on {args.device}, {torch.get_num_threads()} threads"
    )
    entropy, seconds = run_sweep(
        args.num_last,
        args.eta_z,
        args.ratios,
        seeds,
        steps=args.steps,
        batch_size=args.batch_size,
        T=args.T,
        device=args.device,
    )
    runs = len(args.eta_z) * len(args.ratios) * len(seeds)
    per_run = seconds / runs
    header = f"{'num_last':>8} {'M':>4} {'runs':>5} | {'seconds':>8} {'ms/run':>8} {'steps/s':>8}"
    print(header)
    print("-" * len(header))
    for v, num_last in enumerate(args.num_last):
        print(
            f"{num_last:>8} {syn_medium(num_last).M:>4} {runs:>5} | {seconds[v]:>8.2f} "
            f"{1e3 * per_run[v]:>8.1f} {args.steps / per_run[v]:>8.0f}"
        )
    print(f"{'all':>8} {'':>4} {runs * len(args.num_last):>5} | {seconds.sum():>8.2f}")
    mean = np.nanmean(entropy, axis=-1)
    print("\nmean final distinct-token entropy over seeds (nats)")
    header = f"{'num_last':>8} {'eta_z':>6} | " + " ".join(f"{f'r={r:g}':>7}" for r in args.ratios)
    print(header)
    print("-" * len(header))
    for v, num_last in enumerate(args.num_last):
        for z, eta_z in enumerate(args.eta_z):
            print(f"{num_last:>8} {eta_z:>6g} | " + " ".join(f"{x:>7.4f}" for x in mean[v, z]))
    if not np.all(np.isfinite(entropy)):
        print(f"warning: {int(np.sum(~np.isfinite(entropy)))} runs diverged (non-finite entropy)")
    return dict(
        entropy=entropy,
        seconds=seconds,
        seconds_per_run=per_run,
        num_lasts=tuple(args.num_last),
        eta_zs=tuple(args.eta_z),
        ratios=tuple(args.ratios),
        seeds=seeds,
    )


if __name__ == "__main__":
    main()
