/* activations.c: see engine.h. */
#include "engine.h"
