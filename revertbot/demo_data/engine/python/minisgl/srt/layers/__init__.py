"""Model layers."""
