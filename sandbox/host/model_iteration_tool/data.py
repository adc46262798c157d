"""The original's data module: DataProvider, CausalView and the asset lists.
The original's Binance fetchers (fetch_klines, fetch_assets) are not here:
market data comes from agenttest datasets (agenttest.datasource)."""
from agenttest.data import DataProvider, load_dataset  # noqa: F401
from agenttest.view import CausalView  # noqa: F401
from agenttest.catalog import BREAKOUT_ASSETS, FUNDING_ASSETS, TICKER_TO_SYMBOL  # noqa: F401

__all__ = ["DataProvider", "CausalView", "load_dataset", "BREAKOUT_ASSETS", "FUNDING_ASSETS",
           "TICKER_TO_SYMBOL"]
