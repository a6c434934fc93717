"""rljax.parallel: meshes, name-pattern sharding rules, sharded steps, multi-host.

Import the modules directly (``from rljax.parallel import mesh, sharding``); this package imports
nothing on purpose, so ``rljax.parallel.distributed`` can be imported and initialized before
anything touches a JAX device. See docs/scaling.md.

  mesh          MeshConfig -> jax.make_mesh
  sharding      (pattern, spec) rules -> NamedSharding (the one place)
  population    rules for RL populations (seeds, environments, replay)
  steps         jit_step with explicit in/out shardings; transformer FSDP / tensor rules
  lm            the RLVR update and the sampler on a mesh; populations of sharded learners
  distributed   jax.distributed from config or RLJAX_* env; process-local -> global arrays
  launch        N local processes of one command
"""
