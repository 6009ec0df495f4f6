/* pair_weighting.c: MultiSimilarity / Circle / LiftedStructure / GeneralizedLifted / SNRContrastive. Declarations: engine.h section "pair_weighting.c". */
#include "engine.h"

typedef int me_pairw_placeholder_t; /* keeps the file a valid translation unit until its first kernel */
