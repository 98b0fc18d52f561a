"""Evaluating an objective: what ``--objective`` names (:mod:`.oracles`: a built-in property,
a score table, a Python function, a docking run) and how an evaluation runs and is reported
(:mod:`.evaluators`: in this process; :mod:`trieste_scalable.cluster` runs them on Ray)."""
