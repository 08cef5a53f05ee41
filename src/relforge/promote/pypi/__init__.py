"""PyPI: stage the PyPI-default wheel of each platform (local version stripped, rewritten without
recompression), check it against PyPI's rules and the project's quota, and upload it with twine."""
