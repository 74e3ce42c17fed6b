"""HTML pages: the interactive report, deploy and sweep pages, their tables and assets."""
