"""Action distributions as pure functions of network outputs.

A discrete policy is given by logits ``[B, A]``; a continuous one by a diagonal Gaussian with mean
``[B, D]`` and state-independent ``log_std`` ``[D]``.
"""

import jax
import jax.numpy as jnp

from rljax.losses import policy_gradient


def categorical_sample(key: jax.Array, logits: jax.Array) -> jax.Array:
    """Samples actions ``[B]`` (int32) from logits ``[B, A]``."""
    return jax.random.categorical(key, logits, axis=-1)


def categorical_log_prob(logits: jax.Array, action: jax.Array) -> jax.Array:
    """``log softmax(logits)[action]``; logits ``[B, A]``, action ``[B]`` -> ``[B]``."""
    log_probs = jax.nn.log_softmax(logits, axis=-1)
    return jnp.take_along_axis(log_probs, action[..., None].astype(jnp.int32), axis=-1)[..., 0]


def gaussian_sample(key: jax.Array, mean: jax.Array, log_std: jax.Array) -> jax.Array:
    """Samples ``mean + exp(log_std) * ε``, ``ε ~ N(0, I)``; shapes ``[B, D]``."""
    return mean + jnp.exp(log_std) * jax.random.normal(key, mean.shape, mean.dtype)


def gaussian_log_prob(mean: jax.Array, log_std: jax.Array, action: jax.Array) -> jax.Array:
    """Diagonal-Gaussian log density summed over the action dims: ``[B, D] -> [B]``.

    ``log N(a; μ, σ²) = Σ_d [-(a_d - μ_d)² / (2σ_d²) - log σ_d - ½ log 2π]``.
    """
    z = (action - mean) * jnp.exp(-log_std)
    return jnp.sum(-0.5 * jnp.square(z) - log_std - 0.5 * jnp.log(2.0 * jnp.pi), axis=-1)


def sample_and_log_prob(
    key: jax.Array, policy_out: jax.Array, log_std: jax.Array, discrete: bool
) -> tuple[jax.Array, jax.Array]:
    """Samples an action and returns it with its log-probability (``[B]``)."""
    if discrete:
        action = categorical_sample(key, policy_out)
        return action, categorical_log_prob(policy_out, action)
    action = gaussian_sample(key, policy_out, log_std)
    return action, gaussian_log_prob(policy_out, log_std, action)


def draw_noise(key: jax.Array, shape: tuple[int, ...], dim: int, discrete: bool) -> jax.Array:
    """The noise ``sample_from_noise`` turns into actions, drawn for many steps at once.

    Gumbel ``[*shape, A]`` for a discrete policy (the Gumbel-max trick, as
    ``jax.random.categorical`` samples), standard normal ``[*shape, D]`` for a Gaussian one.
    """
    draw = jax.random.gumbel if discrete else jax.random.normal
    return draw(key, (*shape, dim), jnp.float32)


def sample_from_noise(
    policy_out: jax.Array, log_std: jax.Array, noise: jax.Array, discrete: bool
) -> tuple[jax.Array, jax.Array]:
    """``sample_and_log_prob`` with the randomness given: ``(action, logp)``, ``[B]`` each."""
    if discrete:
        action = jnp.argmax(policy_out + noise, axis=-1)
        return action, categorical_log_prob(policy_out, action)
    action = policy_out + jnp.exp(log_std) * noise
    return action, gaussian_log_prob(policy_out, log_std, action)


def log_prob(policy_out: jax.Array, log_std: jax.Array, action: jax.Array, discrete: bool):
    """Log-probability ``[B]`` of ``action`` under the policy head's distribution."""
    if discrete:
        return categorical_log_prob(policy_out, action)
    return gaussian_log_prob(policy_out, log_std, action)


def entropy(policy_out: jax.Array, log_std: jax.Array, discrete: bool) -> jax.Array:
    """Entropy ``[B]`` of the policy head's distribution."""
    if discrete:
        return policy_gradient.categorical_entropy(policy_out)
    return jnp.broadcast_to(policy_gradient.gaussian_entropy(log_std), policy_out.shape[:-1])
