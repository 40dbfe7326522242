"""`decouple discover-globals`: which globals a test's torch.load calls need, found by running them."""
