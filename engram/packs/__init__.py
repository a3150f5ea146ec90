"""Expert packs: a persona's role, workflow, rules, knowledge and examples that agents load in layers (the seed's
pack format), stored as memories of the namespace so they are searchable, versioned and synced."""
