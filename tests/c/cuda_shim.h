/*
 * cuda_shim.h - what nvcc would supply to a CUDA translation unit, for host g++.
 *
 * Forced in front of a source (`g++ -x c++ -include cuda_shim.h`) so that
 * kernels/device/moetrace.h takes its CUDA path (__CUDACC__: __device__
 * __forceinline__ functions, atomicAdd for the write counter, clock64 for the
 * clock) on a machine without a GPU. The qualifiers are defined away; atomicAdd
 * and clock64 are single-threaded host stand-ins with CUDA's signatures.
 */
#ifndef MOETRACE_CUDA_SHIM_H
#define MOETRACE_CUDA_SHIM_H
#define __CUDACC__ 1
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline

static inline unsigned long long atomicAdd(unsigned long long *address, unsigned long long val)
{
    unsigned long long old = *address;
    *address = old + val;
    return old;
}

static inline long long clock64(void)
{
    static long long cycles = 0;
    return cycles += 7;
}
#endif
