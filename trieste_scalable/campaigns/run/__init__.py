"""One run of a campaign: its session over the campaign directory (start, resume, report) and
the runner that drives the engine and writes what it does."""
