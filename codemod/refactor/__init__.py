"""`decouple refactor` / `decouple pr-body`: from allowlisted files to reviewable PR branches."""
