"""What runs on CUDA runners: the before/after job runner and the reference GPU suites."""
