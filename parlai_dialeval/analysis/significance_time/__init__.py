"""Crowdsourcing time needed for a significant result (Smith et al. 2022, 4.4.3 and Appendices E-G).

Collected ratings (with the seconds each took) are resampled at growing sample sizes; at each size we
test every resample (two-sided binomial test for pairwise techniques, two-sided independent t-test for
single-model ones, alpha 0.05) and record the fraction that is significant (the power) and the mean
worker time the resample cost, onboarding included once per distinct worker. The time needed is the
time at which the power first reaches the target (0.8 by default), interpolated between sample sizes.
Smith et al. do not state their stopping criterion; a power target makes the estimate comparable with a
power calculation (statsmodels), which the tests check.

Modules: ``resampling`` (the engine, arrays in and out) and ``samples`` (protocol adapters: canonical data
to resampling units per technique, metric and model pair).
"""
from __future__ import annotations

from parlai_dialeval.analysis.significance_time.resampling import (Units, binomial_p, binomial_power, chunk_win_rates,
                                                                   combo_units, power_curve, size_grid,
                                                                   time_to_significance, ttest_power)
from parlai_dialeval.analysis.significance_time.samples import (SMITH_PAIRWISE, TECHNIQUES, Sample, combination_samples,
                                                                comparison_metric, onboarding_seconds, pairwise_samples,
                                                                single_model_samples)

__all__ = ["SMITH_PAIRWISE", "TECHNIQUES", "Sample", "Units", "binomial_p", "binomial_power", "chunk_win_rates",
           "combination_samples", "combo_units", "comparison_metric", "onboarding_seconds", "pairwise_samples",
           "power_curve", "single_model_samples", "size_grid", "time_to_significance", "ttest_power"]
