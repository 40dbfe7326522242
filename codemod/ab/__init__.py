"""The A/B runner: compares any two trees (arm A, arm B) test by test; knows nothing of codemods."""
