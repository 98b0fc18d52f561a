"""The application's campaigns, built on the library (``numerics``, ``sampling``, ``models``,
``acquisition``, the packed search space), which never imports them: the engine
(:mod:`.asynchronous`, with its :mod:`.proposer`), where evaluations run (:mod:`.evaluators`,
:mod:`.distributed`), budgeted synchronous campaigns (:mod:`.campaign`) of the algorithms the
command line names (:mod:`.algorithms`), output directories and resume (:mod:`.session`,
:mod:`.worker_session`, :mod:`.campaign_directory`, :mod:`.logdir`), the evaluation logs
(:mod:`.evaluation_log`, :mod:`.worker_log`) and the report (:mod:`.report`)."""
