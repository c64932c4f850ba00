"""Model execution: graph capture and replay."""
