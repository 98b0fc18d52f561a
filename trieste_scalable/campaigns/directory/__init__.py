"""A campaign's directory: its lock and atomic writes (:mod:`.lock`), its records
(:mod:`.records`: the log and ``in_flight.json``; :mod:`.run_record`: ``run.json``), the checks
a start or ``--resume`` makes (:mod:`.checks`) and a session over them (:mod:`.session`)."""
