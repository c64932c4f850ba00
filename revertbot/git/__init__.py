"""Running git: the one process helper, object reads, batched diffs, the scratch object store and
merges. Nothing outside this package starts a git process."""
