"""From evidence to verdict: outcomes from events, signatures, categories, coverage, causes, merge."""
