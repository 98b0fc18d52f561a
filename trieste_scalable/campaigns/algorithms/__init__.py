"""The campaigns' algorithms: one registry entry per rule (:mod:`.registry`, no TensorFlow) and
one builder per family (:mod:`.builders`)."""
