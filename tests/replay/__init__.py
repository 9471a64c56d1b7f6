"""Replay-study (DelusionEval) tests."""
