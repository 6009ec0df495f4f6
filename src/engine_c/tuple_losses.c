/* tuple_losses.c: Angular / Margin / TupletMargin / IntraPairVariance / VICReg. Declarations: engine.h section "tuple_losses.c". */
#include "engine.h"

typedef int me_tuple_placeholder_t; /* keeps the file a valid translation unit until its first kernel */
