/*
 * cpu_relax.h: the hint a spin-wait gives the CPU on each turn, so a
 * spinning core yields pipeline resources to its sibling hyperthread and
 * leaves the loop without a memory-order mis-speculation. x86: PAUSE;
 * aarch64: YIELD; anything else: a compiler barrier only (the loop stays
 * correct, it just spins harder). Used by the lockstep exchange
 * (evaluator/runner/drive/stream.c).
 */
#ifndef AGENTTEST_COMMON_CPU_RELAX_H
#define AGENTTEST_COMMON_CPU_RELAX_H

/* One turn of a spin-wait loop. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

#endif
