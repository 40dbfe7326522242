"""The A/B result's views: terminal, Markdown, HTML, JUnit and repro.sh, and the sentences they share."""
