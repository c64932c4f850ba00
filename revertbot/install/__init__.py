"""``revertbot init``: inspect a repository (``repo_inspect``) and install the workflows and the
configuration into it (``workflows``), and check the repository's GitHub settings for it
(``settings_check``)."""
