/* pair_losses.c: see engine.h. */
#include "engine.h"
