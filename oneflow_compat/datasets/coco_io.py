"""COCO detection datasets (an annotation JSON file and an image folder) read as OneFlow v0.3.4's `COCOReader` op
reads them (`oneflow/user/data/coco_data_reader.{h,cpp}`, `coco_parser.cpp`, `distributed_training_dataset.h`,
`group_batch_dataset.h`):

* the images are those of the file, sorted by id; crowd annotations (iscrowd 1) are skipped; images without a
  valid annotation (none, or every box at most 1 pixel wide or high; keypoint files: fewer than 10 visible
  keypoints) are removed unless asked otherwise;
* category ids map to contiguous labels 1, 2, … in sorted order;
* a box [left, top, width, height] becomes [left, top, left + max(width - 1, 0), top + max(height - 1, 0)], clipped
  to the image ([0, width - 1] × [0, height - 1]) and dropped when empty (labels are kept for every annotation, as
  OneFlow keeps them);
* segmentations: the polygons' points as (n, 2) float32 and, per point, (point index, polygon index, annotation
  index) as (n, 3) int32;
* samples are sharded over the devices (stride or contiguous partition), reshuffled each epoch when asked (from
  `seed + epoch`; numpy's permutation, not std::shuffle, so the order differs from OneFlow's for the same seed), and
  batched, in groups of one aspect ratio (height // width) when `group_by_ratio`.

Pure functions over files; the lazy op (`flow.data.coco_reader`) is built on top of them elsewhere.
"""
import json
import math
import os

import numpy as np

__all__ = ["COCOMeta", "COCOReader"]

MIN_KEYPOINTS_PER_IMAGE = 10


class COCOMeta:
    """The annotation file's images, annotations and categories, as COCOMeta builds them."""

    def __init__(self, annotation_file, image_dir, remove_images_without_annotations=True):
        with open(annotation_file) as f:
            data = json.load(f)
        self.image_dir = image_dir
        self.images = {}
        self.annos = {}
        self.image_annos = {}
        ids = []
        for image in data["images"]:
            i = int(image["id"])
            if i in self.images:
                raise ValueError("%s: image id %d appears twice" % (annotation_file, i))
            ids.append(i)
            self.images[i] = image
            self.image_annos[i] = []
        for anno in data.get("annotations", []):
            if int(anno.get("iscrowd", 0)) == 1:
                continue
            if isinstance(anno.get("segmentation"), list):
                for poly in anno["segmentation"]:
                    if len(poly) <= 6:
                        raise ValueError("%s: annotation %s has a polygon of %d numbers; a polygon needs at least "
                                         "3 points (Check failed: poly.size() > 6)" % (annotation_file, anno["id"],
                                                                                       len(poly)))
            a = int(anno["id"])
            if a in self.annos:
                raise ValueError("%s: annotation id %d appears twice" % (annotation_file, a))
            self.annos[a] = anno
            self.image_annos[int(anno["image_id"])].append(a)
        if remove_images_without_annotations:
            ids = [i for i in ids if self._has_valid_annotations(i)]
        self.image_ids = sorted(ids)
        categories = sorted(int(c["id"]) for c in data.get("categories", []))
        self.contiguous = {c: k + 1 for k, c in enumerate(categories)}

    def _has_valid_annotations(self, image_id):
        annos = [self.annos[a] for a in self.image_annos[image_id]]
        if not annos:
            return False
        if all(not (a["bbox"][2] > 1 and a["bbox"][3] > 1) for a in annos):
            return False
        if "keypoints" not in annos[0]:
            return True
        visible = sum(1 for a in annos if "keypoints" in a for v in a["keypoints"][2::3] if v > 0)
        return visible >= MIN_KEYPOINTS_PER_IMAGE

    def __len__(self):
        return len(self.image_ids)

    def height_width(self, index):
        image = self.images[self.image_ids[index]]
        return int(image["height"]), int(image["width"])

    def sample(self, index):
        """One image's outputs: encoded bytes (uint8), id, (height, width), boxes, labels, polygons, their index."""
        image_id = self.image_ids[index]
        image = self.images[image_id]
        h, w = int(image["height"]), int(image["width"])
        with open(os.path.join(self.image_dir, image["file_name"]), "rb") as f:
            data = np.frombuffer(f.read(), np.uint8).copy()
        annos = [self.annos[a] for a in self.image_annos[image_id]]
        boxes = []
        for a in annos:
            left, top, bw, bh = (np.float32(v) for v in a["bbox"])
            right = left + max(bw - np.float32(1), np.float32(0))
            bottom = top + max(bh - np.float32(1), np.float32(0))
            clip_w, clip_h = np.float32(w - 1), np.float32(h - 1)
            left, right = (min(max(v, np.float32(0)), clip_w) for v in (left, right))
            top, bottom = (min(max(v, np.float32(0)), clip_h) for v in (top, bottom))
            if right > left and bottom > top:
                boxes.append((left, top, right, bottom))
        labels = np.array([self.contiguous[int(a["category_id"])] for a in annos], np.int32)
        points, index = [], []
        for segm_idx, a in enumerate(annos):
            segm = a.get("segmentation")
            if not isinstance(segm, list):
                continue
            for poly_idx, poly in enumerate(segm):
                for pt_idx in range(len(poly) // 2):
                    points.append((poly[2 * pt_idx], poly[2 * pt_idx + 1]))
                    index.append((pt_idx, poly_idx, segm_idx))
        return (data, np.int64(image_id), np.array([h, w], np.int32), np.array(boxes, np.float32).reshape(-1, 4),
                labels, np.array(points, np.float32).reshape(-1, 2), np.array(index, np.int32).reshape(-1, 3))


class COCOReader:
    """Batches of sample indices for one device (`parallel_id` of `parallel_num`), endlessly."""

    def __init__(self, meta, batch_size, parallel_num=1, parallel_id=0, stride_partition=True, shuffle=True, seed=0,
                 group_by_ratio=True):
        if len(meta) == 0:
            raise ValueError("COCOReader: the annotation file has no image with a valid annotation")
        self.meta = meta
        self.batch_size = batch_size
        self.num_shards = parallel_num
        self.stride = stride_partition
        self.shuffle = shuffle
        self.seed = seed
        self.shard_size = int(math.ceil(len(meta) / float(parallel_num)))
        self.pos = parallel_id if stride_partition else parallel_id * self.shard_size
        self.pos_in_shard = 0
        self.epoch = 0
        self.seq = np.arange(len(meta))
        self._new_sequence()
        self.group_by_ratio = group_by_ratio
        self.buffered = {}  # group id -> list of [order, indices]
        self.order = 0

    def _new_sequence(self):
        if self.shuffle:
            self.seq = np.random.default_rng((self.seed + self.epoch) % (1 << 63)).permutation(len(self.meta))
        self.epoch += 1

    def _next_index(self):
        index = int(self.seq[self.pos])
        if self.stride:
            self.pos += self.num_shards
        else:
            self.pos += 1
            self.pos_in_shard += 1
            if self.pos_in_shard == self.shard_size:
                self.pos += (self.num_shards - 1) * self.shard_size
                self.pos_in_shard = 0
        if self.pos >= len(self.seq):
            self._new_sequence()
            self.pos %= len(self.seq)
        return index

    def _group(self, index):
        h, w = self.meta.height_width(index)
        return h // w

    def next_batch(self):
        """The next batch's sample indices (GroupBatchDataset when grouping by aspect ratio)."""
        if not self.group_by_ratio:
            return [self._next_index() for _ in range(self.batch_size)]
        ret, group = [], -1
        pending = [(batches[0][0], g) for g, batches in self.buffered.items() if batches]
        if pending:
            group = min(pending)[1]
            ret = self.buffered[group].pop(0)[1]
        while len(ret) < self.batch_size:
            index = self._next_index()
            g = self._group(index)
            if group == -1:
                group = g
            if g == group:
                ret.append(index)
            else:
                batches = self.buffered.setdefault(g, [])
                if not batches or len(batches[-1][1]) == self.batch_size:
                    batches.append([self.order, [index]])
                    self.order += 1
                else:
                    batches[-1][1].append(index)
        return ret
