"""`decouple survey`: the whole campaign at a glance.

Every file of the allowlist (or the paths named) through the same analysis `apply` runs (the
engine with the same transforms, the same linter gate), labels alone first, then with
`--restructure auto` for the files labels alone cannot finish: one status per file, why, who
owns it, and the suggested PR batches. `model` is the versioned result the views read
(`codemod/report/survey/`); `analysis` turns the engine's results into a file's survey; `run`
is the pipeline (selection, the cache keys, the engine runs; per-file surveys are kept between runs
in the engine's store, `codemod/engine/cache.py`); `batches` groups the ready files into PRs;
`history` reads the allowlist's burndown from git.
"""
