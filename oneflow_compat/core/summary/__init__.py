"""TensorBoard event files and OneFlow's projector files for `flow.summary` (legacy-api: summary ops)."""
