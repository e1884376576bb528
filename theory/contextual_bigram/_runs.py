"""The runs several sparse-contextual-bigram checks share, made once per process."""

import functools

import equinox as eqx
import numpy as np

import dynamics
import tasks.contextual_bigram as cb


def algorithm1_runs(full: bool):
    """Algorithm 1 on the default instance, 8 seeds and 1000 Stage-2 steps (32 and 4000 when
    `full`), and vanilla SGD at its two step sizes for as many steps, from the same keys: the runs
    that `algorithm1_recovers`, `l1_reduces_off_support` and the SGD checks share (made once per
    process).

    **Returns:** `(instance, Algorithm1 config, its runs, {step: SGD runs}, SGD steps)`.
    """
    return _algorithm1_runs(bool(full))


@functools.lru_cache(maxsize=2)
def _algorithm1_runs(full: bool):
    inst = cb.default_instance()
    seeds = 32 if full else 8
    cfg = cb.Algorithm1(stage2_steps=4000 if full else 1000)
    keys = dynamics.seed_keys(0, seeds)
    alg, _ = dynamics.run_many(eqx.Partial(cb.run_algorithm, inst, cfg=cfg), keys)
    n_sgd = cfg.stage2_steps + cfg.every * int(np.ceil(np.median(alg["tau1"]) / cfg.every))
    sgd = {}
    for eta in (cfg.eta1, cfg.eta2):
        sgd_cfg = cb.SGD(
            kind="vanilla", eta=eta, batch=cfg.batch, num_steps=n_sgd, every=cfg.every, c_f=cfg.c_f
        )
        sgd[eta], _ = dynamics.run_many(eqx.Partial(cb.run_sgd, inst, cfg=sgd_cfg), keys)
    return inst, cfg, alg, sgd, n_sgd
