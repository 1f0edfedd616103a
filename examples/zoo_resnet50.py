"""ResNet-50 as OneFlow-Benchmark's `Classification/cnns` trains it (v0.4.0: `resnet_model.py`'s layer names and
initializers, SGD with momentum 0.875, label smoothing 0.1, linear warmup then cosine decay, L2 on weights and batch
norm parameters), on synthetic data from `flow.data.decode_random` as the zoo's `--train_data_dir`-less path.

    python examples/zoo_resnet50.py [--devices N] [--steps S] [--batch-size-per-device B] [--image-size P]
                                    [--fuse-bn-relu] [--fuse-bn-add-relu] [--channel-last]
    mpiexec -n 2 python examples/zoo_resnet50.py --devices 1       # 2 machines of 1 device

`resnet50(images, ...)` is importable (tests/test_zoo_resnet.py trains it at small sizes); the average pool covers
whatever spatial size is left, so images smaller than 224 px work."""
import argparse

import oneflow as flow

BLOCK_COUNTS = (3, 4, 6, 3)
BLOCK_FILTERS = (256, 512, 1024, 2048)
BLOCK_FILTERS_INNER = (64, 128, 256, 512)


class ResnetBuilder:
    """The zoo's builder: conv (no bias) + batch norm (+ relu), bottlenecks with the stride on the 3x3 (v1.5)."""

    def __init__(self, weight_regularizer=None, channel_last=False, fuse_bn_relu=False, fuse_bn_add_relu=False,
                 trainable=True, training=True):
        self.data_format = "NHWC" if channel_last else "NCHW"
        self.weight_initializer = flow.variance_scaling_initializer(2, "fan_in", "random_normal",
                                                                    data_format=self.data_format)
        self.weight_regularizer = weight_regularizer
        self.fuse_bn_relu, self.fuse_bn_add_relu = fuse_bn_relu, fuse_bn_add_relu
        self.trainable, self.training = trainable, training

    def _conv2d(self, name, x, filters, kernel_size, strides=1, padding="SAME"):
        channels = x.shape[3] if self.data_format == "NHWC" else x.shape[1]
        shape = ((filters, kernel_size, kernel_size, channels) if self.data_format == "NHWC"
                 else (filters, channels, kernel_size, kernel_size))
        weight = flow.get_variable(name + "-weight", shape=shape, dtype=x.dtype, initializer=self.weight_initializer,
                                   regularizer=self.weight_regularizer, model_name="weight", trainable=self.trainable)
        return flow.nn.conv2d(x, weight, strides, padding, self.data_format, 1, name=name)

    def _bn_args(self, last):
        init = flow.zeros_initializer() if last else flow.ones_initializer()
        return dict(axis=3 if self.data_format == "NHWC" else 1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                    trainable=self.trainable, training=self.training, gamma_initializer=init,
                    moving_variance_initializer=init, gamma_regularizer=self.weight_regularizer,
                    beta_regularizer=self.weight_regularizer)

    def batch_norm(self, x, name, last=False):
        return flow.layers.batch_normalization(inputs=x, name=name, **self._bn_args(last))

    def batch_norm_relu(self, x, name, last=False):
        if self.fuse_bn_relu:
            return flow.layers.batch_normalization_relu(inputs=x, name=name + "_bn_relu", **self._bn_args(last))
        return flow.nn.relu(self.batch_norm(x, name + "_bn", last))

    def batch_norm_add_relu(self, x, addend, name, last=False):
        if self.fuse_bn_add_relu:
            return flow.layers.batch_normalization_add_relu(inputs=x, addend=addend, name=name + "_bn_add_relu",
                                                            **self._bn_args(last))
        return flow.nn.relu(self.batch_norm(x, name + "_bn", last) + addend)

    def conv2d_affine(self, x, name, filters, kernel_size, strides):
        padding = "SAME" if strides > 1 or kernel_size > 1 else "VALID"
        return self._conv2d(name, x, filters, kernel_size, strides, padding)

    def bottleneck(self, x, block, filters, inner, strides):
        a = self.batch_norm_relu(self.conv2d_affine(x, block + "_branch2a", inner, 1, 1), block + "_branch2a")
        b = self.batch_norm_relu(self.conv2d_affine(a, block + "_branch2b", inner, 3, strides), block + "_branch2b")
        return self.conv2d_affine(b, block + "_branch2c", filters, 1, 1)

    def residual_block(self, x, block, filters, inner, strides):
        if strides != 1 or block == "res2_0":
            shortcut = self.batch_norm(self.conv2d_affine(x, block + "_branch1", filters, 1, strides),
                                       block + "_branch1_bn")
        else:
            shortcut = x
        return self.batch_norm_add_relu(self.bottleneck(x, block, filters, inner, strides), shortcut,
                                        block + "_branch2c", last=True)

    def body(self, x, blocks=BLOCK_COUNTS):
        for i, (count, filters, inner) in enumerate(zip(blocks, BLOCK_FILTERS, BLOCK_FILTERS_INNER)):
            for j in range(count):
                x = self.residual_block(x, "res%d_%d" % (i + 2, j), filters, inner, (1 if i == 0 else 2) if j == 0
                                        else 1)
        return x

    def stem(self, x):
        x = self.batch_norm_relu(self._conv2d("conv1", x, 64, 7, 2), "conv1")
        return flow.nn.max_pool2d(x, ksize=3, strides=2, padding="SAME", data_format=self.data_format, name="pool1")


def resnet50(images, classes=1000, wd=1.0 / 32768, channel_last=False, fuse_bn_relu=False, fuse_bn_add_relu=False,
             blocks=BLOCK_COUNTS, training=True):
    """The zoo's ResNet-50 (blocks (3, 4, 6, 3)); logits of `classes` units."""
    builder = ResnetBuilder(flow.regularizers.l2(wd) if 0.0 < wd < 1.0 else None, channel_last, fuse_bn_relu,
                            fuse_bn_add_relu, training=training)
    with flow.scope.namespace("Resnet"):
        body = builder.body(builder.stem(images), blocks)
        hw = body.shape[1:3] if channel_last else body.shape[2:4]
        pool5 = flow.nn.avg_pool2d(body, ksize=list(hw), strides=1, padding="VALID", data_format=builder.data_format,
                                   name="pool5")
        return flow.layers.dense(flow.reshape(pool5, (pool5.shape[0], -1)), units=classes, use_bias=True,
                                 kernel_initializer=flow.variance_scaling_initializer(2, "fan_in", "random_normal"),
                                 bias_initializer=flow.zeros_initializer(),
                                 kernel_regularizer=flow.regularizers.l2(wd) if 0.0 < wd < 1.0 else None,
                                 bias_regularizer=flow.regularizers.l2(wd) if 0.0 < wd < 1.0 else None,
                                 name="fc1001")


def loss_and_optimizer(logits, labels, classes, lr, steps, warmup_steps, momentum=0.875, label_smoothing=0.1):
    """The zoo's loss (label-smoothed softmax cross entropy, mean) and SGD set-up (optimizer_util.py)."""
    one_hot = flow.one_hot(labels, depth=classes, dtype=logits.dtype,
                           on_value=1 - label_smoothing + label_smoothing / classes,
                           off_value=label_smoothing / classes)
    loss = flow.math.reduce_mean(flow.nn.softmax_cross_entropy_with_logits(one_hot, logits, name="softmax_loss"))
    warmup = flow.optimizer.warmup.linear(warmup_steps, 0) if warmup_steps > 0 else None
    schedule = flow.optimizer.CosineScheduler(base_lr=lr, steps=steps - warmup_steps, warmup=warmup)
    flow.optimizer.SGD(schedule, momentum=momentum).minimize(loss)
    return loss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size-per-device", type=int, default=4)
    ap.add_argument("--image-size", type=int, default=224)
    ap.add_argument("--classes", type=int, default=1000)
    ap.add_argument("--learning-rate", type=float, default=0.256)
    ap.add_argument("--fuse-bn-relu", action="store_true")
    ap.add_argument("--fuse-bn-add-relu", action="store_true")
    ap.add_argument("--channel-last", action="store_true")
    a = ap.parse_args()
    flow.config.gpu_device_num(a.devices)
    ranks = flow.distributed.get_world_size()
    if ranks > 1:  # under mpiexec: one machine per rank, as OneFlow's multi-node runs
        flow.env.machine([{"addr": "127.0.0.%d" % (r + 1)} for r in range(ranks)])
    batch = a.batch_size_per_device * a.devices * ranks
    config = flow.FunctionConfig()
    config.default_logical_view(flow.scope.consistent_view())
    config.default_data_type(flow.float)

    @flow.global_function("train", config)
    def train_job():
        # the zoo's synthetic data (ofrecord_util.load_synthetic): labels all 0, images uniform in [0, 1)
        labels = flow.data.decode_random(shape=(), dtype=flow.int32, batch_size=batch,
                                         initializer=flow.zeros_initializer(flow.int32))
        shape = (a.image_size, a.image_size, 3) if a.channel_last else (3, a.image_size, a.image_size)
        images = flow.data.decode_random(shape=shape, dtype=flow.float, batch_size=batch)
        logits = resnet50(images, a.classes, channel_last=a.channel_last, fuse_bn_relu=a.fuse_bn_relu,
                          fuse_bn_add_relu=a.fuse_bn_add_relu)
        return loss_and_optimizer(logits, labels, a.classes, a.learning_rate, a.steps * 10, a.steps * 5)

    for step in range(a.steps):
        print("step %d loss %.6f" % (step + 1, float(train_job().get().numpy().mean())))


if __name__ == "__main__":
    main()
