"""The application's campaigns, built on the library (``numerics``, ``sampling``, ``models``,
``acquisition``, the packed search space), which never imports them: the engine
(:mod:`.engine`, with its :mod:`.proposer`), where evaluations run (:mod:`.evaluators`,
:mod:`.distributed`), one run of a campaign and its Python entry point (:mod:`.runner`), the
algorithms the command line names (:mod:`.algorithms`), output directories and resume
(:mod:`.session`, :mod:`.campaign_directory`, :mod:`.logdir`), the records
(:mod:`.records`), what a person watches (:mod:`.monitor`) and the report (:mod:`.report`).
The algorithms are data (:mod:`.registry`)."""
