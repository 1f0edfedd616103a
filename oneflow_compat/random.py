"""`flow.random.*`: random data ops (ops in `ops/data_ops.py`)."""
from oneflow_compat._api.data_api import CoinFlip, coin_flip
