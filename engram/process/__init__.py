"""Process plumbing: how one Engram process runs its services (runtime), finds or starts a node (launcher,
nodeinfo), listens (ports), keeps its health, metrics and C heap, runs periodic steps, and starts the embedded
node's nats-server (natsd)."""
