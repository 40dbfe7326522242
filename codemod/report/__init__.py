"""The views: each reads one result model and renders it; one folder per product."""
