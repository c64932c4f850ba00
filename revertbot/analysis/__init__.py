"""Analysis stages: Python symbols, their dependents, history and risk."""
