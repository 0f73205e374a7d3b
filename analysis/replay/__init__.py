"""Tables on recorded trajectories and their answer-now branches (docs/replay.md):
offline stopping policies, confidence-gated controllers and calibration.
"""
