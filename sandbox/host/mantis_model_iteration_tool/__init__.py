"""The agent workspace's package name of the original, aliasing model_iteration_tool."""
from model_iteration_tool import Featurizer, Predictor, CausalView, evaluate  # noqa: F401


def __getattr__(name):
    import model_iteration_tool
    return getattr(model_iteration_tool, name)
