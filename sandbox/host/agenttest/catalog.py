"""The original's CHALLENGES table (name -> ChallengeConfig), read from the C
challenge table (ch_catalog_json), and the original's asset lists."""
from dataclasses import dataclass, field

__all__ = ["ChallengeConfig", "challenge_table", "BREAKOUT_ASSETS", "FUNDING_ASSETS",
           "TICKER_TO_SYMBOL"]

BREAKOUT_ASSETS = ["BTC", "ETH", "XRP", "SOL", "TRX", "DOGE", "ADA", "BCH", "XMR", "LINK", "XLM",
                   "ZEC", "SUI", "LTC", "AVAX", "HBAR", "SHIB", "TON", "CRO", "DOT", "UNI", "MNT",
                   "TAO", "AAVE", "PEPE", "NEAR", "ICP", "ETC", "ONDO"]
FUNDING_ASSETS = ["BTC", "ETH", "SOL", "XRP", "DOGE", "ADA", "AVAX", "LINK", "DOT", "SUI", "NEAR",
                  "AAVE", "UNI", "LTC", "HBAR", "PEPE", "TRX", "SHIB", "TAO", "ONDO"]
TICKER_TO_SYMBOL = {a: a + "USDT" for a in BREAKOUT_ASSETS}

# breakout parameters of spec/mantis.md §1.0 (the C table holds the same)
_BREAKOUT = {"range_lookback": 5760, "barrier_pct": 25.0, "min_range_pct": 1.0}


@dataclass
class ChallengeConfig:
    """One challenge, the original's fields."""
    name: str
    challenge_type: str
    primary_asset: str
    assets: list = field(default_factory=list)
    embedding_dim: int = 0
    horizon: int = 0
    weight: float = 1.0
    range_lookback: int = 0
    barrier_pct: float = 25.0
    min_range_pct: float = 1.0


def challenge_table():
    """{name: ChallengeConfig} of every challenge, FUNDING-XSEC included."""
    from .evaluator import challenges
    out = {}
    for name, c in challenges(fields=("funding_1h",)).items():
        extra = _BREAKOUT if c["type"] == "breakout" else {}
        out[name] = ChallengeConfig(name=name, challenge_type=c["type"], primary_asset=c["asset"],
                                    assets=list(c["assets"]), embedding_dim=int(c["embedding_dim"]),
                                    horizon=int(c["horizon"]), weight=float(c["weight"]), **extra)
    return out
