"""What loom-sim leaves on disk: typed records (turns, transcripts, scores, the run), the
run directory's files and their crash-safe writers, and the trace."""
