"""Tables on recorded trajectories and their answer-now branches (SPEC §13.6):
offline stopping policies, confidence-gated controllers and calibration.
"""
