"""What an A/B run is asked and what its arms are: options, sources, trees, shards, the diff."""
