"""The CUDA source of one Philox4x64-10 uniform, shared by the device kernels that draw (kernels/cuda_random.py's
dropout, kernels/random.py's draws): element e's uniform is word e % 4 of the block at counter e // 4 + 1 under
the key (k0, k1), mapped as numpy's Generator.random maps it ((u >> 11) 2^-53), the same bits as numpy's Philox.
Text only (no imports), so that both can include it without importing each other."""

PHILOX_UNIFORM = r"""
__device__ __forceinline__ double philox_uniform(unsigned long long e, unsigned long long k0,
                                                 unsigned long long k1) {
    unsigned long long c0 = e / 4 + 1, c1 = 0, c2 = 0, c3 = 0;
    unsigned long long key0 = k0, key1 = k1;
    for (int r = 0; r < 10; ++r) {
        if (r > 0) {
            key0 += 0x9E3779B97F4A7C15ULL;
            key1 += 0xBB67AE8584CAA73BULL;
        }
        unsigned long long lo0 = 0xD2E7470EE14C6C93ULL * c0, hi0 = __umul64hi(0xD2E7470EE14C6C93ULL, c0);
        unsigned long long lo1 = 0xCA5A826395121157ULL * c2, hi1 = __umul64hi(0xCA5A826395121157ULL, c2);
        unsigned long long n0 = hi1 ^ c1 ^ key0, n2 = hi0 ^ c3 ^ key1;
        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    }
    unsigned long long lane = e % 4;
    unsigned long long word = lane == 0 ? c0 : (lane == 1 ? c1 : (lane == 2 ? c2 : c3));
    return (double)(word >> 11) * (1.0 / 9007199254740992.0);
}

"""
