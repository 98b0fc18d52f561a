"""A campaign's settings: the typed specifications every command builds and checks
(:mod:`.campaign`: the settings every campaign has and ``optimize``'s; :mod:`.library`:
``screen``'s and ``propose``'s), their fields (:mod:`.fields`) and the defaults that depend on
the campaign, resolved into a new specification (:mod:`.defaults`). No TensorFlow."""
