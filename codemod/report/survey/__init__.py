"""The survey's views: terminal, Markdown and the HTML dashboard with its charts."""
