/* A stand-in for Windows' bcryptprimitives.dll, for running under wine 8.0 only (which lacks it):
 * Rust's standard library imports ProcessPrng from it. Filled from RtlGenRandom
 * (advapi32's SystemFunction036), which wine has. Never shipped: tests/windows/run.sh puts it
 * beside the test programs. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
