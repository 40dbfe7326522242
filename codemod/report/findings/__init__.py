"""The codemod result's views (classify, apply, lint): the table, lintrunner, GitHub, SARIF."""
