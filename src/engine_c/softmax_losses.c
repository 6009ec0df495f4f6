/* softmax_losses.c: NTXent / SupCon / NPairs / NCA / Instance (softmax over pairs). Declarations: engine.h section "softmax_losses.c". */
#include "engine.h"

typedef int me_softmax_placeholder_t; /* keeps the file a valid translation unit until its first kernel */
