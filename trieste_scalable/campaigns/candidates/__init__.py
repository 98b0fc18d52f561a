"""What a library campaign searches, and what it costs: the one factory of a specification's
candidates (an enumerated library or a make-on-demand space) with their model and rule, the
library model's settings, and the memory forecast."""
