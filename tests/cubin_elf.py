"""What a cubin (the ELF file NVRTC makes for one GPU architecture) says of its kernels, read from the file itself:
the entry functions, and each one's register count and stack frame size.

The compile test (tests/test_cuda_sources.py) asks ptxas for the same figures (`--ptxas-options=-v`), but that
report is text NVRTC may or may not hand back in the program log (on the first GPU machine it came back empty for
every module, with the same NVRTC 13.0 that reports here); the cubin carries the figures whatever the log says.

The layout read (the ELF of CUDA's binaries, as cuobjdump shows it): `.symtab` entries of type FUNC with the
CUDA entry flag (st_other 0x10) are the kernels; the `.nv.info` section is a list of attribute records
(1 byte format, 1 byte attribute, then for format 4 a 2-byte size and that many bytes): attribute 0x2f
(EIATTR_REGCOUNT) holds (symbol index, registers), 0x11 (EIATTR_FRAME_SIZE) (symbol index, bytes of stack frame:
spilled registers and local arrays live there, so a kernel that spills has a frame).
"""
import struct

STT_FUNC = 2
STO_CUDA_ENTRY = 0x10
EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F
_FORMAT_SIZES = {1: 0, 2: 2, 3: 2}  # format -> fixed payload bytes; format 4 carries its own size


class Kernel:
    __slots__ = ("name", "registers", "frame")

    def __init__(self, name, registers=None, frame=None):
        self.name, self.registers, self.frame = name, registers, frame

    def __repr__(self):
        return "Kernel(%s, registers=%s, frame=%s)" % (self.name, self.registers, self.frame)


def _sections(data):
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names = headers[shstrndx]

    def string(table, offset):
        at = table[4] + offset
        return data[at:data.index(b"\0", at)].decode()

    return [(string(names, h[0]), h) for h in headers], string


def _records(data, header):
    at, end = header[4], header[4] + header[5]
    while at + 2 <= end:
        fmt, attr = data[at], data[at + 1]
        at += 2
        if fmt == 4:
            size, = struct.unpack_from("<H", data, at)
            at += 2
        else:
            size = _FORMAT_SIZES.get(fmt)
            if size is None:
                raise ValueError("unknown .nv.info record format %d" % fmt)
        yield attr, data[at:at + size]
        at += size


def kernels(cubin):
    """{entry function name: Kernel} of a cubin."""
    sections, string = _sections(cubin)
    by_name = dict(sections)
    symtab, strtab = by_name[".symtab"], sections[by_name[".symtab"][6]][1]
    symbols = []
    for k in range(symtab[5] // 24):
        name, info, other, _shndx, _value, _size = struct.unpack_from("<IBBHQQ", cubin, symtab[4] + 24 * k)
        symbols.append((string(strtab, name), info & 0xF, other))
    entries = {k: Kernel(name) for k, (name, kind, other) in enumerate(symbols)
               if kind == STT_FUNC and other & STO_CUDA_ENTRY}
    for name, header in sections:
        if name != ".nv.info":
            continue
        for attr, payload in _records(cubin, header):
            if attr in (EIATTR_REGCOUNT, EIATTR_FRAME_SIZE) and len(payload) == 8:
                symbol, value = struct.unpack("<II", payload)
                if symbol in entries:
                    setattr(entries[symbol], "registers" if attr == EIATTR_REGCOUNT else "frame", value)
    return {k.name: k for k in entries.values()}
