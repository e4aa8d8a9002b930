"""Reports of a study's results. One module per output format."""
