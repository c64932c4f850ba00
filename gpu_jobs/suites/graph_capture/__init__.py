"""Reference graph-capture suite: capture engine, output-buffer strategies and their tests."""
