"""One engine for every campaign: ask/tell over an evaluator (:mod:`.loop`, whole-batch and
asynchronous modes, with :mod:`.proposer`), evaluators in this process (:mod:`.evaluators`;
Ray's are in :mod:`trieste_scalable.cluster`), the one adapter that touches Trieste's private
state (:mod:`.ask_tell`) and one run of a campaign (:mod:`.runner`)."""
