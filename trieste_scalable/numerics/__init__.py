"""Pure TensorFlow numerics (no Trieste imports): linear algebra, DTC posterior, evidence."""
