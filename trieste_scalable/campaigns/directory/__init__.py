"""A campaign's directory: its lock and atomic writes (:mod:`.lock`), its records
(:mod:`.records`: the log and ``in_flight.json``; ``run.json`` is the specification's own
record, :mod:`~trieste_scalable.campaigns.spec.record`) and the checks a start or ``--resume``
makes (:mod:`.checks`); a session over them is :mod:`~trieste_scalable.campaigns.run.session`."""
