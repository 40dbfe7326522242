"""The codemod pipeline: the selection, each file through the transforms, the linter gate, the result.

Which files a run takes (discovery), each file through the transforms, verified, diffed and written
(process), the checkout's own linter as a gate, the result model, and which torch the target
interpreter has.
"""
