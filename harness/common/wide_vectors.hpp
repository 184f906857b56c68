#pragma once
// GRADER_WIDE_VECTORS marks a function that runs once per warp instruction of a simulated grid,
// or once per element of a 64 MiB buffer, whose loops the compiler vectorises. It is built twice:
// for the x86-64 every machine has (SSE2: two 64-bit lanes an instruction) and with AVX2 (four),
// and the program takes the AVX2 build where the CPU has it, once, when it loads (GCC's
// target_clones, resolved through an ifunc). Both builds compute the same bits: integer
// arithmetic is the same operation, IEEE float arithmetic rounds alike in both, and AVX2 brings
// no fused multiply-add (FMA is its own target, which the clone does not enable), so no a * b + c
// can be contracted into one rounding. Elsewhere it is empty: on another architecture, and with
// Clang (include-what-you-use's parser among them), whose target_clones refuses the address of a
// template's clone (the decoded engine's step table holds them) and a member declared first
// without it.

#if defined(__x86_64__) && defined(__linux__) && defined(__GNUC__) && !defined(__clang__)
#if __has_attribute(target_clones)
#define GRADER_WIDE_VECTORS __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef GRADER_WIDE_VECTORS
#define GRADER_WIDE_VECTORS
#endif
