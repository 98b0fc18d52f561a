"""Molecules with RDKit: libraries of SMILES (the shipped ones and files), fingerprints and
built-in properties (:mod:`.molecules`), and SMILES held compactly (:mod:`.labels`)."""
