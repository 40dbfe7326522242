"""The codemod pipeline: which files a run takes (discovery), each file through the transforms,
verified, diffed and written (process), the checkout's own linter as a gate, the result model,
the target-interpreter probe, and `discover-globals`."""
