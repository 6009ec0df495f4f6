/* CPU feature probe and the engine's thread count. Placeholder: helper A owns this file. */
#include "engine.h"
#include <stdlib.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static int g_num_threads = 0;

int me_cpu_features(void) { return 0; }
const char *me_gemm_kernel_name(void) { return "generic"; }
void me_set_num_threads(int n) { g_num_threads = n < 1 ? 1 : n; }
int me_get_num_threads(void) {
    if (g_num_threads < 1) {
#ifdef _OPENMP
        g_num_threads = omp_get_num_procs();
#else
        g_num_threads = 1;
#endif
    }
    return g_num_threads;
}
