"""The global-tensor API's `flow.nn` classes (OneFlow 0.5-0.9), implemented in `_global/`: modules, losses,
`nn.Graph` (`oneflow_compat/nn/__init__.py` binds them as `flow.nn.*`)."""
from oneflow_compat._global.losses import CrossEntropyLoss, MSELoss  # noqa: F401
from oneflow_compat._global.modules import (  # noqa: F401
    Dropout, Flatten, Identity, Linear, Module, ModuleList, Parameter, ReLU, Sequential)
from oneflow_compat._global import graph  # noqa: F401 (`flow.nn.graph.GraphModule`)
from oneflow_compat._global.graph import Graph  # noqa: F401
# nn ops family: activations
from oneflow_compat._global.nn_activations import (  # noqa: F401,E402
    ELU, GELU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU, LogSigmoid, LogSoftmax, Mish, PReLU, ReLU6, Sigmoid,
    SiLU, Softmax, Softplus, Tanh)
# nn ops family: losses
from oneflow_compat._global.nn_losses import (  # noqa: F401,E402
    BCELoss, BCEWithLogitsLoss, CombinedMarginLoss, KLDivLoss, L1Loss, MarginRankingLoss, NLLLoss, SmoothL1Loss,
    TripletMarginLoss)
# nn ops family: normalization
from oneflow_compat._global.nn_norms import (  # noqa: F401,E402
    BatchNorm1d, BatchNorm2d, BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LayerNorm)
# nn ops family: convolutions
from oneflow_compat._global.nn_convs import (  # noqa: F401,E402
    Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)
# nn ops family: pooling
from oneflow_compat._global.nn_pools import (  # noqa: F401,E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AvgPool1d, AvgPool2d, AvgPool3d, MaxPool1d, MaxPool2d,
    MaxPool3d)
# ctc helper: adaptive max pooling, max unpooling, CTC loss
from oneflow_compat._global.nn_pool_indices import (  # noqa: F401,E402
    AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d, MaxUnpool1d, MaxUnpool2d, MaxUnpool3d)
from oneflow_compat._global.nn_ctc import CTCLoss  # noqa: F401,E402
# nn ops family: embedding, pixel shuffle, upsampling, padding, channel dropout
from oneflow_compat._global.nn_misc import (  # noqa: F401,E402
    ConstantPad1d, ConstantPad2d, ConstantPad3d, Dropout1d, Dropout2d, Dropout3d, Embedding, PixelShufflev2,
    ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, ZeroPad2d)
# global API: containers (ModuleDict, ParameterList, ParameterDict)
from oneflow_compat._global.containers import ModuleDict, ParameterDict, ParameterList  # noqa: F401,E402
# nnextra helper (issue 21): further activations
from oneflow_compat._global.nn_activations_extra import (  # noqa: F401,E402
    CELU, GLU, Hardshrink, QuickGELU, SELU, Softshrink, Softsign, Threshold)
from oneflow_compat._global.nn_fold import Fold, Unfold  # noqa: F401,E402
from oneflow_compat._global.nn_sync_batchnorm import SyncBatchNorm  # noqa: F401,E402
# api-data: OneFlow 0.9's quantization-aware training modules (_global/nn_quantization.py) and data-pipeline
# modules (_global/nn_data.py)
from oneflow_compat._global.nn_quantization import (  # noqa: F401,E402
    FakeQuantization, MinMaxObserver, MovingAverageMinMaxObserver, QatConv1d, QatConv2d, QatConv3d, Quantization)
from oneflow_compat._global.nn_data import (  # noqa: F401,E402
    COCOReader, CoinFlip, CropMirrorNormalize, OFRecordBytesDecoder, OFRecordImageDecoder,
    OFRecordImageDecoderRandomCrop, OFRecordRawDecoder, OFRecordReader, OneRecReader)
# api-nn: recurrent layers (OneFlow 0.9's nn.rst)
from oneflow_compat._global.nn_rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell  # noqa: F401,E402
from oneflow_compat._global.nn_functional_extra import CosineSimilarity, PairwiseDistance  # noqa: F401,E402
from oneflow_compat._global.nn_norms_extra import (  # noqa: F401,E402
    FusedBatchNorm1d, FusedBatchNorm2d, FusedBatchNorm3d, RMSLayerNorm, RMSNorm)
# api-misc2: OneFlow 0.9's nn names beyond the reference pages: the RNN base classes, OneFlow's lower-case
# aliases of the OFRecord modules (nn/__init__.py v0.9.0 binds both), FusedMLP, AllReduce, partial FC sampling
from oneflow_compat._global.nn_rnn import RNNBase, RNNCellBase  # noqa: F401,E402
from oneflow_compat._global.nn_data import OFRecordRawDecoder as OfrecordRawDecoder  # noqa: F401,E402
from oneflow_compat._global.nn_data import OFRecordReader as OfrecordReader  # noqa: F401,E402
from oneflow_compat._global.nn_fused_mlp import FusedMLP  # noqa: F401,E402
from oneflow_compat._global.nn_model_parallel import AllReduce, DistributedPariticalFCSample  # noqa: F401,E402
from oneflow_compat._global.graph_trace_function import trace as _graph_trace  # noqa: E402

Graph.trace = staticmethod(_graph_trace)  # nn.Graph.trace (OneFlow 0.9)
from oneflow_compat._global.nn_readers_extra import GPTIndexedBinDataReader, RawReader  # noqa: F401,E402
