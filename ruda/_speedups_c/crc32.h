/* ruda._speedups: CRC-32 of ruda.data's chunks (included by ruda/_speedups.c: one translation unit). */

/* ------------------------------------------------------------------------------------------ */
/* CRC-32 for ruda.data's chunk checks: zlib's CRC (polynomial 0x04C11DB7, reflected, inverted
 * in and out), so crc32(data, value) == zlib.crc32(data, value).  Bulk data is folded 64 bytes
 * at a time with carry-less multiplies (PCLMULQDQ, where the CPU has it) down to one 16-byte
 * block whose CRC the byte tables finish; elsewhere slice-by-8 tables (slower than zlib's own, so
 * ruda.data then uses zlib: CRC32_FOLDING).  The GIL is released for large buffers. */

static uint32_t crc_tab[8][256];
static int crc_clmul = 0;            /* the CPU has PCLMULQDQ and SSE4.1 */
static uint64_t crc_k[4];            /* fold constants: 64-byte, then 16-byte distances */

/* x^n mod P as 33 reflected bits (bit 32 of the reflected product lands in bit 0) */
static uint64_t
crc_xpow(int n)
{
    uint64_t r = 1;
    for (int i = 0; i < n; i++) {
        r <<= 1;
        if (r >> 32)
            r ^= 0x104C11DB7ULL;
    }
    uint64_t out = 0;
    for (int i = 0; i < 32; i++)
        if (r >> i & 1)
            out |= 1ULL << (31 - i);
    return out << 1;
}

static void
crc_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][b] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int b = 0; b < 256; b++)
            crc_tab[t][b] = crc_tab[0][crc_tab[t - 1][b] & 0xff] ^ (crc_tab[t - 1][b] >> 8);
    /* folding a 128-bit block forward by D bits: its low half times x^(D+32), its high half
     * times x^(D-32) (mod P, reflected) */
    crc_k[0] = crc_xpow(4 * 128 + 32);
    crc_k[1] = crc_xpow(4 * 128 - 32);
    crc_k[2] = crc_xpow(128 + 32);
    crc_k[3] = crc_xpow(128 - 32);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    crc_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
}

/* the raw (not inverted) register after bytes p[0..n) with the tables */
static uint32_t
crc_bytes(uint32_t c, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;         /* little-endian hosts only (ruda.data requires one) */
        c = crc_tab[7][w & 0xff] ^ crc_tab[6][w >> 8 & 0xff] ^ crc_tab[5][w >> 16 & 0xff] ^
            crc_tab[4][w >> 24 & 0xff] ^ crc_tab[3][w >> 32 & 0xff] ^
            crc_tab[2][w >> 40 & 0xff] ^ crc_tab[1][w >> 48 & 0xff] ^ crc_tab[0][w >> 56];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = crc_tab[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_CLMUL_BUILT 1

/* block folded forward over distance k (k's low qword for x's low half, high for high) */
__attribute__((target("pclmul,sse4.1"))) static inline __m128i
crc_fold(__m128i x, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

/* the raw register after p[0..n), n >= 64: the register is XORed into the first 4 bytes
 * (same residue), 4 blocks fold in parallel across each 64 bytes, then into one, whose 16
 * bytes and the tail the tables finish (any bytes of the same residue give the same CRC) */
__attribute__((target("pclmul,sse4.1"))) static uint32_t
crc_clmul_bytes(uint32_t c, const unsigned char *p, size_t n)
{
    const __m128i k4 = _mm_set_epi64x((long long)crc_k[1], (long long)crc_k[0]);
    const __m128i k1 = _mm_set_epi64x((long long)crc_k[3], (long long)crc_k[2]);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)c));
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(crc_fold(x0, k4), _mm_loadu_si128((const __m128i *)p));
        x1 = _mm_xor_si128(crc_fold(x1, k4), _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = _mm_xor_si128(crc_fold(x2, k4), _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = _mm_xor_si128(crc_fold(x3, k4), _mm_loadu_si128((const __m128i *)(p + 48)));
        p += 64;
        n -= 64;
    }
    x0 = _mm_xor_si128(crc_fold(x0, k1), x1);
    x0 = _mm_xor_si128(crc_fold(x0, k1), x2);
    x0 = _mm_xor_si128(crc_fold(x0, k1), x3);
    while (n >= 16) {
        x0 = _mm_xor_si128(crc_fold(x0, k1), _mm_loadu_si128((const __m128i *)p));
        p += 16;
        n -= 16;
    }
    unsigned char last[16];
    _mm_storeu_si128((__m128i *)last, x0);
    return crc_bytes(crc_bytes(0, last, 16), p, n);
}
#endif

static uint32_t
crc_update(uint32_t crc, const unsigned char *p, size_t n, int tables)
{
    uint32_t c = ~crc;
#ifdef CRC_CLMUL_BUILT
    if (crc_clmul && !tables && n >= 64)
        return ~crc_clmul_bytes(c, p, n);
#endif
    return ~crc_bytes(c, p, n);
}

/* crc32(data, value=0, tables=False): zlib.crc32 of any contiguous buffer (tables: the
 * slice-by-8 path even where PCLMULQDQ exists, for tests) */
static PyObject *
m_crc32(PyObject *mod, PyObject *args)
{
    Py_buffer view;
    unsigned int value = 0;
    int tables = 0;
    if (!PyArg_ParseTuple(args, "y*|Ip:crc32", &view, &value, &tables))
        return NULL;
    uint32_t crc;
    if (view.len >= 1 << 16) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc_update(value, view.buf, (size_t)view.len, tables);
        Py_END_ALLOW_THREADS
    }
    else
        crc = crc_update(value, view.buf, (size_t)view.len, tables);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}
