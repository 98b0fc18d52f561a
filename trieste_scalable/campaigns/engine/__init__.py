"""One engine for every campaign: ask/tell over an evaluator (:mod:`.loop`, whole-batch and
asynchronous modes, with :mod:`.proposer`; evaluators:
:mod:`trieste_scalable.evaluation.evaluators` in this process, :mod:`trieste_scalable.cluster` on
Ray) and the one adapter that touches Trieste's private state (:mod:`.ask_tell`); one run of a
campaign over it is :mod:`~trieste_scalable.campaigns.run.runner`."""
