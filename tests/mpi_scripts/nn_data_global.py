"""OneFlow 0.9's data modules on 2 ranks (tests/test_nn_data.py runs it under `mpiexec -n 2` with the folder of an
OFRecord dataset of 2 part files, 3 records each, feature "y" = record index, test_legacy_coco's COCO dataset and 2
OneRec files): with sbp=split(0) each rank reads batch_size / 2 records from its own part file (COCO: the legacy
reader's stride partition), with broadcast every rank reads the whole batch; the coin flip's logical values equal
a local module's of the same seed; quantization on a split input equals the local numbers. Rank 0 prints
`OK <case>` per case, then DONE."""
import sys

import numpy as np

import oneflow_compat as flow

nn = flow.nn


def ok(name, cond, detail=""):
    if not cond:
        raise AssertionError("%s failed on rank %d: %s" % (name, flow.env.get_rank(), detail))
    if flow.env.get_rank() == 0:
        print("OK", name, flush=True)


if __name__ == "__main__":
    folder, anno_file, image_dir, onerec_files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    rank = flow.env.get_rank()
    p = flow.placement("cpu", ranks=[0, 1])
    decode = nn.OFRecordRawDecoder("y", shape=(), dtype=flow.int64)

    split = nn.OFRecordReader(folder, batch_size=4, data_part_num=2, placement=p, sbp=flow.sbp.split(0))
    for call, (mine, whole) in enumerate([([0, 1], [0, 1, 3, 4]), ([2, 0], [2, 0, 5, 3])]):
        y = decode(split())
        want = mine if rank == 0 else [m + 3 for m in mine]
        ok("reader_split_call%d" % call, y.is_global and y.sbp == (flow.sbp.split(0),)
           and y.to_local().numpy().tolist() == want and y.numpy().tolist() == whole, y.to_local().numpy())

    bcast = nn.OFRecordReader(folder, batch_size=4, data_part_num=2, placement=p, sbp=flow.sbp.broadcast)
    y = decode(bcast())
    ok("reader_broadcast", y.sbp == (flow.sbp.broadcast,) and y.to_local().numpy().tolist() == [0, 1, 2, 3],
       y.to_local().numpy())

    coins = nn.CoinFlip(batch_size=8, random_seed=5, placement=p, sbp=flow.sbp.split(0))
    local = nn.CoinFlip(batch_size=8, random_seed=5)
    for call in range(2):
        g, l_ = coins(), local()
        ok("coin_flip_call%d" % call, g.dtype == flow.int8 and tuple(g.to_local().shape) == (4,)
           and g.numpy().tolist() == l_.numpy().tolist(), (g.numpy(), l_.numpy()))

    reader = nn.OneRecReader(onerec_files, batch_size=4, shuffle=False, shuffle_mode="instance", placement=p,
                             sbp=flow.sbp.split(0))
    labels = flow.decode_onerec(reader(), key="labels", dtype=flow.int32, shape=(1,))
    ok("onerec_split", labels.numpy().ravel().tolist() == [0, 1, 100, 101]
       and labels.to_local().numpy().ravel().tolist() == ([0, 1] if rank == 0 else [100, 101]), labels.numpy())

    # COCO (test_legacy_coco's dataset): stride partition, 2 images a rank: rank 0 the 0th and 2nd of the sorted
    # usable ids (1, 2, 3, 4, 6), rank 1 the 1st and 3rd
    coco = nn.COCOReader(anno_file, image_dir, batch_size=4, shuffle=False, group_by_aspect_ratio=False,
                         placement=p, sbp=flow.sbp.split(0))
    image, image_id = coco()[:2]
    ok("coco_split", image_id.numpy().tolist() == [1, 3, 2, 4] and image_id.to_local().numpy().tolist() == (
        [1, 3] if rank == 0 else [2, 4]) and len(image.to_local().numpy()) == 2, image_id.numpy())

    x = (np.random.default_rng(0).random((4, 3, 5)) - 0.5).astype(np.float32)
    want = nn.FakeQuantization(quantization_scheme="affine")(
        flow.tensor(x), *nn.MinMaxObserver(quantization_scheme="affine", per_layer_quantization=False)(
            flow.tensor(x))).numpy()
    gx = flow.tensor(x).to_global(p, flow.sbp.broadcast).to_global(p, flow.sbp.split(0))
    gy = nn.FakeQuantization(quantization_scheme="affine")(
        gx, *nn.MinMaxObserver(quantization_scheme="affine", per_layer_quantization=False)(gx))
    ok("fake_quantization_split", np.array_equal(gy.numpy(), want))
    if rank == 0:
        print("DONE", flush=True)
