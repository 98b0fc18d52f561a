"""The campaigns' algorithms: one registry entry per rule (:mod:`.registry`, no TensorFlow),
one builder per family (:mod:`.builders`), the model and rule of a library campaign
(:mod:`.library_models`) and the memory a campaign will need (:mod:`.memory_estimate`)."""
