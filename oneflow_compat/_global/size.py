"""`flow.Size`: a tensor's shape, a tuple that prints as OneFlow does (`oneflow.Size([4, 5])`)."""


class Size(tuple):
    def __new__(cls, dims=()):
        return super().__new__(cls, (int(d) for d in dims))

    def __repr__(self):
        return "oneflow.Size([%s])" % ", ".join(str(d) for d in self)

    __str__ = __repr__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __getitem__(self, index):
        out = super().__getitem__(index)
        return Size(out) if isinstance(index, slice) else out

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))

    def __reduce__(self):
        return (Size, (tuple(self),))
