"""Query-clustered estimates: one registered estimator per kind of quantity, and their refusal rules.

Used by every layer that reports one (the retrievers' twin preference, the listwise re-rankers,
the judges, the citation study, the analyses).

Built in (:func:`get_estimator` names):

* ``mean_difference`` (:mod:`.mean_difference`): a mean of paired differences, CR1 t interval over
  queries, sign-flip test of the query sums;
* ``clustered_proportion`` (:mod:`.clustered_proportion`): a share with a Wilson interval on
  Korn & Graubard's effective sample size;
* ``position_source`` (:mod:`.position_source`): a listwise re-ranker's position and source
  effects, OLS with query-clustered standard errors (:mod:`.ols`, shared with the gap decomposition).

The refusal rules (:mod:`.base`) and the balanced orders a model is shown a list in
(:mod:`.design`) are here too. The layer sits below ``retrieval``: a re-ranking stage fits one.
Adding an estimator is a file with an :class:`Estimator` subclass and a
:func:`register_estimator` line, listed in :data:`~sourcebias.clustered.base.BUILTIN`, with a
:class:`sourcebias.testing.EstimatorTestCase`.
"""

from __future__ import annotations

from sourcebias.clustered.base import NO_VARIATION, Estimate, Estimator, estimator_kinds, get_estimator, interval_refusal, nothing_refusal, register_estimator

__all__ = ["NO_VARIATION", "Estimate", "Estimator", "estimator_kinds", "get_estimator", "interval_refusal", "nothing_refusal", "register_estimator"]
