# Data pointers of optional float32 C-contiguous arrays, for the typed modules of this package.

cdef inline const float *_fptr(a):
    """The data pointer of a float32 C-contiguous array, NULL for None or an empty array."""
    cdef const float[::1] v
    if a is None or a.size == 0:
        return NULL
    v = a.reshape(-1)
    return &v[0]


cdef inline float *_wptr(a):
    """The same, for a writeable array."""
    cdef float[::1] v
    if a is None or a.size == 0:
        return NULL
    v = a.reshape(-1)
    return &v[0]
