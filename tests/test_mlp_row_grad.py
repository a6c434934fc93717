"""``MLP(row_grad=True)``: the one-column output layer's weight gradient as the row ``g^T x``.

Same gradients as autodiff without the custom VJP (to float32 rounding), also under ``vmap``,
and XLA:CPU no longer emits the weight gradient as a matrix-vector loop fused with the
computation of ``g`` (the control, ``row_grad=False``, does).
"""

import re

import chex
import jax
import jax.numpy as jnp
import pytest

from rljax.nets import continuous
from rljax.nets.mlp import MLP

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="a CPU-only code path")


def _loss(net, params, x, noise):
    q = net.apply(params, x)[..., 0]
    target = jnp.tanh(jax.scipy.special.erfinv(0.5 * noise)) + jnp.log1p(jnp.exp(noise))
    return jnp.mean((q - jax.lax.stop_gradient(target)) ** 2)


def _reference_grads(params, x, noise):
    """Autodiff of the same maths with plain ``x @ w`` (no custom VJP)."""

    def apply(p, inputs):
        h = inputs
        layers = sorted(p["params"], key=lambda name: int(name.split("_")[1]))
        for i, name in enumerate(layers):
            h = h @ p["params"][name]["kernel"] + p["params"][name]["bias"]
            if i < len(layers) - 1:
                h = jax.nn.swish(h)
        return h

    plain = type("Plain", (), {"apply": staticmethod(apply)})
    return jax.grad(lambda p: _loss(plain, p, x, noise))(params)


@pytest.mark.parametrize("row_grad", [False, True])
def test_gradients_match_plain_autodiff(row_grad):
    net = MLP((32, 16), 1, "swish", row_grad=row_grad)
    x = jax.random.normal(jax.random.PRNGKey(1), (64, 5))
    noise = jax.random.uniform(jax.random.PRNGKey(2), (64,), minval=-1.0, maxval=1.0)
    params = net.init(jax.random.PRNGKey(0), x)
    got = jax.jit(jax.grad(lambda p: _loss(net, p, x, noise)))(params)
    want = _reference_grads(params, x, noise)
    chex.assert_trees_all_close(got, want, rtol=1e-5, atol=1e-6)


def test_gradients_match_under_vmap():
    nets = [MLP((32,), 1, "swish", row_grad=rg) for rg in (False, True)]
    xs = jax.random.normal(jax.random.PRNGKey(1), (3, 64, 5))
    noise = jax.random.uniform(jax.random.PRNGKey(2), (3, 64), minval=-1.0, maxval=1.0)
    params = jax.vmap(lambda k: nets[0].init(k, xs[0]))(jax.random.split(jax.random.PRNGKey(0), 3))
    grads = [
        jax.jit(jax.vmap(jax.grad(lambda p, x, n, net=net: _loss(net, p, x, n))))(params, xs, noise)
        for net in nets
    ]
    chex.assert_trees_all_close(grads[0], grads[1], rtol=1e-5, atol=1e-6)


def loop_fused_dots(row_grad: bool) -> list[str]:
    """Names of the loop fusions of the compiled gradient that contain a dot."""
    net = MLP((64, 64), 1, "swish", row_grad=row_grad)
    x = jnp.ones((256, 4))
    params = net.init(jax.random.PRNGKey(0), x)
    hlo = jax.jit(jax.grad(lambda p, n: _loss(net, p, x, n))).lower(params, jnp.ones(256))
    text = hlo.compile().as_text()
    computations = {c.split(" ")[0]: c for c in re.split(r"\n(?=%)", text)}
    loops = re.findall(r"kind=kLoop, calls=(%[\w.]+)", text)
    return [name for name in loops if " dot(" in computations.get(name, "")]


TRAINER_SETTINGS = """
from rljax import xla_flags
xla_flags.set_flags(cpu_threads=1, fast_compile=True)
import sys
sys.path.insert(0, "tests")
from test_mlp_row_grad import loop_fused_dots
print(len(loop_fused_dots(False)), len(loop_fused_dots(True)))
"""


def test_row_grad_keeps_the_weight_gradient_out_of_loop_fusions(run_at_trainer_settings):
    """At the trainer's XLA settings (level 1, the default emitters; this tier's classic
    emitters fuse other dots), ``x^T g`` becomes a loop fusion and ``g^T x`` does not."""
    control, row_grad = map(int, run_at_trainer_settings(TRAINER_SETTINGS, timeout=120).split())
    assert control >= 1, "control: XLA fuses x^T g into a loop"
    assert row_grad == 0


def test_wider_outputs_and_critics_forward_unchanged():
    """``row_grad`` changes no forward value and leaves layers wider than one column alone."""
    obs, action = jnp.ones((8, 3)), jnp.full((8, 1), 0.5)
    outs = []
    for rg in (False, True):
        critics = continuous.Critics((16, 16), 2, 0, "relu", row_grad=rg)
        params = critics.init(jax.random.PRNGKey(0), obs, action)
        outs.append(critics.apply(params, obs, action))
        wide = MLP((16,), 3, row_grad=rg)
        wp = wide.init(jax.random.PRNGKey(0), obs)
        outs.append(jax.grad(lambda p, net=wide: jnp.sum(net.apply(p, obs) ** 3))(wp))
    chex.assert_trees_all_equal(outs[0], outs[2])
    chex.assert_trees_all_equal(outs[1], outs[3])
