/* proxy_losses.c: proxy and classifier losses (P2SGrad, NormalizedSoftmax, ArcFace, ...). Declarations: engine.h section "proxy_losses.c". */
#include "engine.h"

typedef int me_proxy_placeholder_t; /* keeps the file a valid translation unit until its first kernel */
