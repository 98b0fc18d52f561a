"""What a person watches and reads: the progress bar and TensorBoard (:mod:`.monitor`), the
summary and plot (:mod:`.report`, :mod:`.screening_summary`) and the best molecules' picture
(:mod:`.molecule_pictures`)."""
