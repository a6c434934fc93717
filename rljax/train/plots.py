"""Learning-curve plots: one line per grid point (mean over seeds) with a shaded band."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def band_curves(
    x: np.ndarray,
    curves: np.ndarray,
    labels: list[str],
    path: str,
    *,
    title: str = "",
    num_seeds: int | None = None,
    xlabel: str = "env steps per agent",
    ylabel: str = "episode return",
) -> None:
    """Saves a PNG of ``curves`` ``[G, 3, N]`` = (mean, low, high) per grid point against ``x``.

    Args:
      x: x-axis values ``[N]``.
      curves: per grid point, the mean line and the band's lower and upper edges.
      labels: legend label per grid point ("" for a single unlabeled run).
      path: output PNG path.
      title: figure title.
      num_seeds: shown in the legend ("mean of S seeds, band = min..max").
    """
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for g, label in enumerate(labels):
        mean, low, high = curves[g]
        name = f"mean of {num_seeds} seeds, band min-max" if num_seeds else "mean, band min-max"
        name = f"{label}: {name}" if label else name
        line = ax.plot(x, mean, lw=1.8, label=name)
        ax.fill_between(x, low, high, color=line[0].get_color(), alpha=0.2, lw=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
