"""One package per paper: its data model, Equinox models, losses, metrics, and its simulations
(final classes of `dynamics.AbstractSimulation`, listed in each package's `SIMULATIONS`).

- `tasks.scan_snap`: Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023).
- `tasks.ntp_partial_order`: next-token prediction with query-dependent partial orders (Huang,
  Liang, Yang, NeurIPS 2024).
- `tasks.decision_lists`: decision lists learned by a one-layer transformer.
- `tasks.contextual_bigram`: sparse contextual bigrams (Ren, Wang, Lee, NeurIPS 2024).
- `tasks.sparse_token_selection`: sparse token selection (Wang, Wei, Hsu, Lee, ICML 2024).
"""
