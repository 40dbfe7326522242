"""Reading a file for the torch.load transform: its calls, the modes, discovery, triage, decisions."""
