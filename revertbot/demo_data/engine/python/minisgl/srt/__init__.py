"""Engine runtime."""
