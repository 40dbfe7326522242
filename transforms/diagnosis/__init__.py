"""What a test class that no label fits needs: its device sets, what its tests say, the advice.

The device sets its tests run on today (`devices`), what its tests say about devices (`reading`:
guards, `torch.cuda` uses, module constants) and the diagnosis with the advice that follows
(`diagnose`).
"""
