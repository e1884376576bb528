"""Next-token prediction with partial orders: for Recipe-B datasets, the cosine of the learned W_kq
with the max-margin W*_kq (QP of Eqn 3) and with Proposition 2's closed form, at the paper's
T_2 = 900 and at 5000 stage-2 steps, and whether the closed form applies (its Hall-type condition
holds for every query). A measurement, not a timing benchmark.

    python bench/ntp_partial_order/directions.py [--datasets 10]
"""

import argparse

import jax

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import dynamics  # noqa: E402
import tasks.ntp_partial_order as ntp  # noqa: E402
from theory.ntp_partial_order import cosine  # noqa: E402
from theory.ntp_partial_order.closed_forms import hall_columns, w_kq_closed_form, w_kq_star_qp  # noqa: E402


def main(argv=None) -> list[dict]:
    """Print the table; **Returns:** one row per dataset as a dict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=10, help="Recipe-B seeds 0..N-1")
    args = parser.parse_args(argv)
    sim = ntp.Algorithm1(num_steps2=5000, every=100)
    runs = dynamics.simulate(sim, args.datasets)
    at_900 = int(np.flatnonzero(runs["time"].values[0] == 900)[0])
    print(
        "| seed | sentences | queries failing Hall | closed form applies | max |QP − closed| "
        "| cos(W_kq, W*_kq) t=900 | t=5000 | cos(W_kq, closed) t=900 | t=5000 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for seed in range(args.datasets):  # run i trains on the dataset of seed i
        data = sim.task.dataset(seed)
        qp, closed, hall = w_kq_star_qp(data).W, w_kq_closed_form(data), hall_columns(data)
        w_900, w_end = runs["W_kq"].values[seed, at_900], runs["W_kq"].values[seed, -1]
        row = dict(
            seed=int(seed),
            sentences=int(data.num_sentences),
            queries_failing_hall=int((~hall).sum()),
            closed_form_applies=bool(hall.all()),
            qp_minus_closed=float(np.abs(qp - closed).max()),
            cos_qp=(cosine(w_900, qp), cosine(w_end, qp)),
            cos_closed=(cosine(w_900, closed), cosine(w_end, closed)),
        )
        rows.append(row)
        print(
            f"| {row['seed']} | {row['sentences']} | {row['queries_failing_hall']} "
            f"| {'yes' if row['closed_form_applies'] else 'no'} | {row['qp_minus_closed']:.3g} "
            f"| {row['cos_qp'][0]:.5f} | {row['cos_qp'][1]:.5f} "
            f"| {row['cos_closed'][0]:.5f} | {row['cos_closed'][1]:.5f} |"
        )
    return rows


if __name__ == "__main__":
    main()
