"""Pure loss functions: per-element outputs; averaging only in `reduce`."""
