"""Secret-detection rules: gitleaks' default rule set and Engram's own, read from TOML files in this package."""
