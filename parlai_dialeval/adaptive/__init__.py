"""Adaptive evaluation: anytime-valid certification of model orders and study planning
(../shared/notes/adaptive_evaluation.md). Pure statistics; the commands are scripts/certify.py and plan.py."""
