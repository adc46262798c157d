"""The original's data module: DataProvider, CausalView, the asset lists and
fetch_assets. fetch_assets reads the newest fetched dataset version (no
network: agenttest.datasource.fetch_assets); the original's fetch_klines is
not here (market data comes from `agenttest data fetch` and the prefetch job)."""
from agenttest.data import DataProvider, load_dataset  # noqa: F401
from agenttest.datasource import fetch_assets  # noqa: F401
from agenttest.view import CausalView  # noqa: F401
from agenttest.catalog import BREAKOUT_ASSETS, FUNDING_ASSETS, TICKER_TO_SYMBOL  # noqa: F401

__all__ = ["DataProvider", "CausalView", "load_dataset", "fetch_assets", "BREAKOUT_ASSETS", "FUNDING_ASSETS",
           "TICKER_TO_SYMBOL"]
