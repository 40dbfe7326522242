"""What a test class that no label fits needs: the device sets its tests run on today
(`devices`), what its tests say about devices (`reading`: guards, `torch.cuda` uses, module
constants) and the diagnosis with the advice that follows (`diagnose`)."""
