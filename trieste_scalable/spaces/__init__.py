"""Candidate spaces a campaign searches without enumerating them, and the place new formats go.
Today one: a make-on-demand space, a reaction and one reagent list per component
(:mod:`.reagents`, :mod:`.reaction`), as Trieste's search space of reagent tuples
(:mod:`.search_space`) and a campaign's problem (:mod:`.problem`), modelled through its products'
fingerprints (:mod:`.featurised`) and searched by a pool built each batch (:mod:`.pool_rule`,
:mod:`.coordinate_search`). Campaigns reach it through one factory
(:mod:`trieste_scalable.campaigns.candidates.factory`)."""
