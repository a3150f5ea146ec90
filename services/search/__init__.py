"""Search: the indexer (log → index) and every read."""
