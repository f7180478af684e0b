"""Mixed-effects logistic regression as in seed 000 (sections 2.3.2, 2.4.2, 2.4.3):

    logit P(judgment correct) = b0 + b_condition + b_ai_correct * ai_correct
                                [+ b_condition:ai_correct] + u_item + v_rater,
    u_item ~ N(0, s_item^2), v_rater ~ N(0, s_rater^2)

with the unassisted condition and "AI incorrect" as references, as the seed codes them: with the
interaction, ``b_condition`` is the assisted-minus-unassisted log-odds on items the AI got wrong
(negative = over-reliance) and ``b_condition + b_condition:ai_correct`` the same where it was right.

Estimator: maximum likelihood under the Laplace approximation (as lme4's ``glmer`` by default),
fitted by GPBoost (``gpboost.GPModel`` with grouped random effects for item and rater and a
``bernoulli_logit`` likelihood); standard errors from its approximate Hessian, ``z = b / SE``,
two-sided normal p-values. statsmodels has no frequentist logistic GLMM: its
``BinomialBayesMixedGLM`` is a variational-Bayes (or joint MAP) fit, and in our simulations its
posterior standard deviations were about half the estimates' sampling standard deviation, so its
z and p would overstate significance. GPBoost is an optional dependency: ``pip install
'seerbench[mixed]'`` (included in ``dev``).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import tempfile
from collections.abc import Iterator

import numpy as np
from pydantic import BaseModel

from seerbench.complementarity._data import AIItems, HumanData
from seerbench.errors import ConfigError

EXTRA_HINT = (
    "the mixed-effects model needs GPBoost: pip install 'seerbench[mixed]' (or leave it out with --no-mixed)"
)


class Coefficient(BaseModel):
    term: str
    estimate: float
    se: float | None
    z: float | None
    p: float | None


class MixedEffects(BaseModel):
    formula: str
    estimator: str
    n: int
    items: int
    raters: int
    reference_condition: str
    coefficients: list[Coefficient]
    random_effect_sd: dict[str, float]
    note: str | None = None


#: Fits tried in turn until the standard errors exist: L-BFGS at a tight tolerance (the Hessian
#: needs an accurate optimum), the same with restarts, then gradient descent. Rarely (about 1 fit in
#: 30 in our simulations) the first stops where the approximate Hessian is not positive definite.
_FITS: tuple[dict[str, object], ...] = (
    {"delta_rel_conv": 1e-10},
    {"delta_rel_conv": 1e-10, "max_num_restarts_lbfgs": 2},
    {"delta_rel_conv": 1e-10, "optimizer_cov": "gradient_descent"},
)


def gpboost_available() -> bool:
    try:
        import gpboost  # noqa: F401
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def _captured_stdout(lines: list[str]) -> Iterator[None]:
    """GPBoost's C++ core prints warnings on the process's stdout; keep them off ours (``--json``)
    and hand them back in ``lines``."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stdout.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        try:
            os.dup2(tmp.fileno(), fd)
            yield
        finally:
            sys.stdout.flush()
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            lines.extend(x.strip() for x in tmp.read().decode("utf-8", "replace").splitlines() if x.strip())


def design(
    ai: AIItems, humans: HumanData, reference: str, *, interaction: bool = True
) -> tuple[np.ndarray, list[str]]:
    """The fixed-effects design matrix (intercept, condition dummies, ai_correct, interactions)."""
    if reference not in humans.conditions:
        raise ConfigError(
            f"reference condition {reference!r} is not in the "
            f"study; conditions: {', '.join(humans.conditions)}"
        )
    others = [c for c in humans.conditions if c != reference]
    aic = ai.correct[humans.item]
    cols = [np.ones(humans.n)]
    names = ["(Intercept)"]
    dummies = {}
    for c in others:
        d = (humans.condition == humans.conditions.index(c)).astype(float)
        dummies[c] = d
        cols.append(d)
        names.append(f"condition[{c}]")
    cols.append(aic)
    names.append("ai_correct")
    if interaction:
        for c in others:
            cols.append(dummies[c] * aic)
            names.append(f"condition[{c}]:ai_correct")
    return np.column_stack(cols), names


def mixed_effects(
    ai: AIItems, humans: HumanData, *, reference: str | None = None, interaction: bool = True
) -> MixedEffects:
    """Fit the seed's mixed-effects logistic regression to the human judgments."""
    ref = reference or humans.unassisted
    if ref is None:
        raise ConfigError(
            "which condition is the reference (unassisted)? name it (--unassisted NAME); conditions: "
            + ", ".join(humans.conditions)
        )
    try:
        import gpboost as gpb
    except ImportError:
        raise ConfigError(EXTRA_HINT) from None
    from scipy.stats import norm  # here: scipy.stats alone takes 0.7 s to import

    x, names = design(ai, humans, ref, interaction=interaction)
    rank = np.linalg.matrix_rank(x)
    if rank < x.shape[1]:
        raise ConfigError(
            "the mixed-effects design is rank deficient (a condition, or AI right/wrong, has no judgments "
            "in some combination); fit it without the interaction or with more data"
        )
    groups = np.column_stack([humans.item, humans.rater])
    printed: list[str] = []
    for params in _FITS:
        printed.clear()
        with _captured_stdout(printed):
            model = gpb.GPModel(group_data=groups, likelihood="bernoulli_logit", num_parallel_threads=1)
            model.fit(y=humans.correct, X=x, params=dict(params))
            coef = np.asarray(model.get_coef(std_err=True), dtype=float)
            cov_pars = np.asarray(model.get_cov_pars(), dtype=float).ravel()
        if np.isfinite(coef[1]).all():
            break
    est, se = coef[0], coef[1]
    rows = []
    missing_se = False
    for k, name in enumerate(names):
        s = float(se[k])
        if not math.isfinite(s) or s <= 0:
            missing_se = True
            rows.append(Coefficient(term=name, estimate=float(est[k]), se=None, z=None, p=None))
            continue
        z = float(est[k]) / s
        rows.append(Coefficient(term=name, estimate=float(est[k]), se=s, z=z, p=float(2 * norm.sf(abs(z)))))
    formula = (
        "correct ~ condition"
        + (" * ai_correct" if interaction else " + ai_correct")
        + " + (1 | item) + (1 | rater)"
    )
    return MixedEffects(
        formula=formula,
        estimator=(
            "maximum likelihood, Laplace approximation (GPBoost "
            "GPModel, bernoulli_logit, grouped random effects)"
        ),
        n=humans.n,
        items=int(np.unique(humans.item).size),
        raters=int(np.unique(humans.rater).size),
        reference_condition=ref,
        coefficients=rows,
        random_effect_sd={
            "item": float(math.sqrt(max(cov_pars[0], 0.0))),
            "rater": float(math.sqrt(max(cov_pars[1], 0.0))),
        },
        note="; ".join(
            (
                ["standard errors unavailable: the approximate Hessian is not positive definite"]
                if missing_se
                else []
            )
            # the tight tolerance (which the standard errors need) ends L-BFGS by a failed line
            # search at the optimum; that message is expected, others are passed on
            + [
                f"GPBoost: {x}"
                for x in printed
                if "Warning" in x and "line search has not been successful" not in x
            ]
        )
        or None,
    )
