/* ranking_losses.c: FastAP / Histogram / PNP / RankedList / DynamicSoftMargin / ThresholdConsistentMargin / Manifold. Declarations: engine.h section "ranking_losses.c". */
#include "engine.h"

typedef int me_ranking_placeholder_t; /* keeps the file a valid translation unit until its first kernel */
