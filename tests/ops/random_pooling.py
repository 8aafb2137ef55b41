"""Random MaxPoolingGrad geometry shared by the tests that check the reference against torch."""

from __future__ import annotations

from typing import Any

import numpy as np

from dmlconform.ops.max_pooling_grad import pooled_size


def random_geometry(rng: np.random.Generator, spatial: list[int], padding_windows: int
                    ) -> tuple[dict[str, Any], list[int]]:
    """Pooling params over `spatial` (windows 1-3, strides and dilations 1-2, padding up to `padding_windows`
    windows a side) and the pooled size they give (an entry < 1 where the window does not fit)."""
    dims = len(spatial)
    window = [int(v) for v in rng.integers(1, 4, size=dims)]
    p = {"Strides": [int(v) for v in rng.integers(1, 3, size=dims)], "WindowSize": window,
         "StartPadding": [int(rng.integers(0, padding_windows * w + 1)) for w in window],
         "EndPadding": [int(rng.integers(0, padding_windows * w + 1)) for w in window],
         "Dilations": [int(v) for v in rng.integers(1, 3, size=dims)]}
    pooled = [pooled_size(n, k, s, a, b, d) for n, a, b, k, d, s in
              zip(spatial, p["StartPadding"], p["EndPadding"], window, p["Dilations"], p["Strides"], strict=True)]
    return p, pooled
