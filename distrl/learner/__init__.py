"""The learner: A-RIDE and its baselines, the prioritised replay buffer, and checkpoints."""
