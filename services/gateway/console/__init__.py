"""The web console at /console: its static files (static/) and the reads it adds to the API."""
