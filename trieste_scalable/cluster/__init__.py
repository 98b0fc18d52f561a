"""Ray's helpers, in one place: joining a cluster or owning a local one (:mod:`.connection`,
whose :mod:`.reaper` stops a killed driver's cluster), evaluations on Ray workers
(:mod:`.evaluators`), and a library store's shards scored on actors (:mod:`.scoring_actors`,
placed one a node by :mod:`.actor_placement`). Only plain ``ray`` is needed (the
``[distributed]`` extra); nothing here is imported unless a campaign uses Ray."""
