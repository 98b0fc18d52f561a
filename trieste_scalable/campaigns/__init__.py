"""The application's campaigns, built on the library (``numerics``, ``sampling``, ``models``,
``acquisition``, the packed search space), which never imports them, one subpackage a concept:
the settings (:mod:`.spec`), the algorithms (:mod:`.algorithms`), the engine
(:mod:`.engine`), the directory and its records (:mod:`.directory`), what a person watches
(:mod:`.reporting`) and prospective campaigns (:mod:`.prospective`); the commands ``screen``
(:mod:`.screen`) and ``optimize`` (:mod:`.optimize`) choose where evaluations run
(:mod:`trieste_scalable.cluster`)."""
