"""Live events over Server-Sent Events at /events/stream."""
