"""History: the SQLite store the dashboard reads (``db``) and the records on the history branch
that it is rebuilt from (``history_branch``)."""
