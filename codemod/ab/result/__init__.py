"""The A/B result model: the typed, versioned result every report reads, its schema, the notices."""
