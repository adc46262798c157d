"""The signal contract: Featurizer and Predictor base classes.

A Featurizer turns the causal view at bar t into a mapping name -> array;
`compute` is called at t = warmup, warmup + compute_interval, ... and the
Predictor's `predict` at every bar with the latest features. The embedding
is `predict`'s output, flattened and cast to float32. Strategy files define
`TechFeaturizer`/`TechPredictor` (the agent contract) or any subclasses of
these two classes.
"""

__all__ = ["Featurizer", "Predictor", "find_signal_classes"]


class Featurizer:
    """Base class: set `warmup` and `compute_interval`, implement compute()."""

    warmup = 0
    compute_interval = 1

    def setup(self, assets, total_timesteps):
        """Called once per evaluation before the first compute (reset state here)."""

    def compute(self, view):
        """Features at view.t: a mapping name -> array of any shape."""
        raise NotImplementedError("Featurizer.compute must be implemented")


class Predictor:
    """Base class: implement predict(features) -> 1-D array (any shape is flattened)."""

    def predict(self, features):
        raise NotImplementedError("Predictor.predict must be implemented")


def _pick(env, names, base):
    for n in names:
        c = env.get(n)
        if isinstance(c, type):
            return c
    found = [v for k, v in env.items()
             if isinstance(v, type) and issubclass(v, base) and v is not base
             and getattr(v, "__module__", None) == env.get("__name__")]
    return found[-1] if found else None


def find_signal_classes(env):
    """The (featurizer, predictor) classes a strategy module defines: the
    agent names TechFeaturizer/TechPredictor, else Featurizer/Predictor
    defined in the file, else the last subclasses of ours (or of the
    original's alias names). Raises ValueError naming what is missing."""
    f = _pick(env, ("TechFeaturizer",), Featurizer)
    p = _pick(env, ("TechPredictor",), Predictor)
    if f is None and isinstance(env.get("Featurizer"), type) and env["Featurizer"] is not Featurizer:
        f = env["Featurizer"]
    if p is None and isinstance(env.get("Predictor"), type) and env["Predictor"] is not Predictor:
        p = env["Predictor"]
    missing = [n for n, c in (("TechFeaturizer", f), ("TechPredictor", p)) if c is None]
    if missing:
        raise ValueError("signal code must define %s (or Featurizer/Predictor subclasses)"
                         % " and ".join(missing))
    return f, p
