"""accord.kernels."""
