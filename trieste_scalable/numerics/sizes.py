"""Sizes the compiled numerics work in, here without TensorFlow so that what estimates them
before loading it (the campaigns' memory estimate) reads the same numbers."""

CHUNK_SIZE = 2048
"""Candidates or query points a compiled call scores at once: the models' default
``chunk_size``, which bounds the memory a prediction over many points takes."""
