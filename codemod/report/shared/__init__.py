"""What the views share: the report strings (en/zh), Markdown cells, the HTML table's script and style."""
