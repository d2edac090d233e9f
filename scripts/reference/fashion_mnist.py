"""Reading Debian's Fashion-MNIST IDX files (dataset-fashion-mnist), for the reference scripts beside it."""
import gzip

import numpy as np


def idx(path):
    """The array in gzip-compressed IDX file `path` (uint8 images or labels)."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)
