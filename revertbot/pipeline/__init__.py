"""One revert end to end: ``check`` runs the verdict and analysis stages into a RevertReport;
``backport`` plans and creates the revert's backports to release branches."""
