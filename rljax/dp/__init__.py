"""rljax.dp: exact tabular MDPs, classic and distributional DP, stock augmentation, horizons.

Everything is a pure function of a `TabularMDP` pytree, jittable and vmappable over MDPs of one
shape. See docs/dp.md for the maths, the conventions and the CVaR results.
"""

from rljax.dp.classic import (
    Solution,
    bellman_q,
    initial_value,
    policy_evaluation,
    policy_iteration,
    value_iteration,
)
from rljax.dp.distributional import (
    categorical_policy_evaluation,
    categorical_projection,
    greedy_distributional_control,
    quantile_policy_evaluation,
)
from rljax.dp.functionals import (
    cramer_distance,
    cvar,
    cvar_of_samples,
    expected_utility,
    homeostatic_score,
    mean,
    threshold_probability,
    wasserstein_1,
)
from rljax.dp.horizon import (
    action_gap,
    effective_horizon,
    greedy_is_optimal,
    min_qvi_steps,
    q_value_iteration,
    random_policy_q,
    rover_policy,
)
from rljax.dp.instances import (
    CLIFF_ACTIONS,
    chain,
    cliff_gridworld,
    gamble_chain,
    homeostasis,
    random_mdp,
    tree_mdp,
)
from rljax.dp.mdp import (
    TabularMDP,
    as_time_indexed,
    expected_reward,
    make_mdp,
    return_bounds,
    stack_mdps,
)
from rljax.dp.monte_carlo import sample_returns, sample_stock_returns
from rljax.dp.stock import (
    CVaRSolution,
    StockSolution,
    augment_with_stock,
    cvar_optimize,
    evaluate_stock_policy,
    stock_distributional_value_iteration,
    stock_grid,
    stock_value_iteration,
)

__all__ = [
    "CLIFF_ACTIONS",
    "CVaRSolution",
    "Solution",
    "StockSolution",
    "TabularMDP",
    "action_gap",
    "as_time_indexed",
    "augment_with_stock",
    "bellman_q",
    "categorical_policy_evaluation",
    "categorical_projection",
    "chain",
    "cliff_gridworld",
    "cramer_distance",
    "cvar",
    "cvar_of_samples",
    "cvar_optimize",
    "effective_horizon",
    "evaluate_stock_policy",
    "expected_reward",
    "expected_utility",
    "gamble_chain",
    "greedy_distributional_control",
    "greedy_is_optimal",
    "homeostasis",
    "homeostatic_score",
    "initial_value",
    "make_mdp",
    "mean",
    "min_qvi_steps",
    "policy_evaluation",
    "policy_iteration",
    "q_value_iteration",
    "quantile_policy_evaluation",
    "random_mdp",
    "random_policy_q",
    "return_bounds",
    "rover_policy",
    "sample_returns",
    "sample_stock_returns",
    "stack_mdps",
    "stock_distributional_value_iteration",
    "stock_grid",
    "stock_value_iteration",
    "threshold_probability",
    "tree_mdp",
    "value_iteration",
    "wasserstein_1",
]
